// The page's only way to reach the server. W1: every request carries credentials
// (`credentials: "include"`) and every write carries the CSRF header the REST surface
// checks on cookie-authenticated requests.

// Over https the server names its cookies with the __Host- prefix.
const CSRF_COOKIES = ["__Host-clarion_csrf", "clarion_csrf"];
const CSRF_HEADER = "X-CSRF-Token";

let knownCsrf = "";

/** Remember the CSRF token the login response and `GET /auth/me` return. */
export function setCsrfToken(token) {
  knownCsrf = typeof token === "string" ? token : "";
}

function csrfToken() {
  // The readable cookie (double submit) is current even when another tab signed in again
  // since this page asked /auth/me; the remembered value covers a host that sets no cookie.
  for (const part of document.cookie.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (CSRF_COOKIES.includes(name)) return decodeURIComponent(rest.join("="));
  }
  return knownCsrf;
}

/**
 * Send one JSON request. Never throws: resolves to `{status, ok, body, closedReason}` where
 * `status` is 0 when the server could not be reached, `body` is the parsed JSON (or null) and
 * `closedReason` the Clarion-Closed-Reason header ("" without one).
 */
export async function api(method, path, body) {
  // A label for the record of who resolved; with a cookie session the server knows anyway.
  const headers = { Accept: "application/json", "X-Clarion-Surface": "inbox" };
  const init = { method, headers, credentials: "include", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  if (method !== "GET" && method !== "HEAD") {
    const token = csrfToken();
    if (token) headers[CSRF_HEADER] = token;
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    return { status: 0, ok: false, body: null };
  }
  let data = null;
  try {
    const text = await response.text();
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  // Issue #30: a 409 for a question closed without an answer says why in this header.
  const closedReason = response.headers.get("Clarion-Closed-Reason") ?? "";
  return { status: response.status, ok: response.ok, body: data, closedReason };
}

/** "<what failed>: <why>." — the server's `error` text, or what is known about the failure. */
export function errorText(result, what) {
  let why;
  if (result.body && typeof result.body.error === "string" && result.body.error) {
    why = result.body.error;
  } else if (result.status === 0) {
    why = "Clarion could not be reached";
  } else {
    why = `HTTP ${result.status}`;
  }
  return `${what}: ${why.replace(/[.\s]+$/, "")}.`;
}

// Relative to the page, so the inbox keeps working when a host mounts Clarion under a prefix.
export const paths = {
  me: "api/v1/auth/me",
  login: "api/v1/auth/login",
  logout: "api/v1/auth/logout",
  events: "api/v1/events",
  // The server's default page size: a larger limit could exceed CLARION_MAX_PAGE_SIZE (a 400).
  tasks: (cursor) => (cursor ? `api/v1/tasks?${new URLSearchParams({ cursor })}` : "api/v1/tasks"),
  pending: (cursor) => {
    const query = new URLSearchParams({ limit: "200" });
    if (cursor) query.set("cursor", cursor);
    return `api/v1/clarification/pending?${query}`;
  },
  // With the questions closed without an answer (issue #30).
  resolved: (limit) => `api/v1/clarification/resolved?limit=${limit}&include=closed`,
  respond: (pendingId) => `api/v1/clarification/${encodeURIComponent(pendingId)}/respond`,
  // Issue #33: an approval request's decision (quorum, veto, standing approvals).
  decision: (pendingId) => `api/v1/approvals/${encodeURIComponent(pendingId)}/decision`,
};
