// Entry point: find out whether authentication is on, sign in when it is, then run the inbox.

import { api, errorText, paths, setCsrfToken } from "./api.js";
import { AnsweredView } from "./answered.js";
import { h, setText } from "./dom.js";
import { Inbox } from "./inbox.js";
import { connectLive } from "./live.js";
import { TaskTitles } from "./tasks.js";

const $ = (id) => document.getElementById(id);

const views = ["loading", "signin", "inbox", "fatal"];
const TITLE = document.title;
let inbox = null;
let answered = null;
let live = null;

function show(view) {
  for (const name of views) $(name).hidden = name !== view;
  $("answered").hidden = view !== "inbox"; // shown with the inbox, below it
}

let announceTimer = null;
let clearTimer = null;
/** Polite status message (the live region); re-announces a repeated message too, and
 * clears itself after a while so a stale message never sits over the page. */
function announce(text) {
  const region = $("status");
  region.textContent = "";
  clearTimeout(announceTimer);
  clearTimeout(clearTimer);
  announceTimer = setTimeout(() => {
    region.textContent = text;
    clearTimer = setTimeout(() => {
      region.textContent = "";
    }, 8000);
  }, 50);
}

function setConnection(state) {
  const el = $("connection");
  el.hidden = false;
  el.dataset.state = state;
  el.textContent = state === "live" ? "Live" : "Reconnecting…";
  el.title =
    state === "live"
      ? "New questions appear here as they are asked."
      : "The live connection dropped; Clarion is reconnecting.";
}

/** The tab's title counts the questions waiting, so a background tab shows them. */
function setWaiting(questions) {
  document.title = questions ? `(${questions}) ${TITLE}` : TITLE;
}

function stopInbox() {
  if (live) live.stop();
  if (inbox) inbox.stop();
  if (answered) answered.stop();
  live = null;
  inbox = null;
  answered = null;
  $("connection").hidden = true;
  setWaiting(0);
}

/** The sign-in form; `notice` says why it is shown (signed out, session ended): information,
 * not an error — errors are what the form itself reports. */
function showSignIn(notice) {
  stopInbox();
  setCsrfToken("");
  $("account").hidden = true;
  show("signin");
  $("signin-note").textContent = notice ?? "";
  $("signin-error").textContent = "";
  $("signin-token").focus();
}

/** Who is signed in — the user's name, their id on hover — or that nobody needs to be. */
function showAccount(me) {
  const authEnabled = Boolean(me && me.auth_enabled);
  const name = $("account-name");
  // Auth disabled: everyone is the same unscoped caller, so there is nothing to sign out of.
  $("sign-out").hidden = !authEnabled;
  if (!authEnabled) {
    setText(name, "Authentication off — everyone sees everything");
    name.title = "CLARION_AUTH=disabled: keep this server on loopback.";
  } else {
    const userId = typeof me.user_id === "string" ? me.user_id : "";
    const who = h("strong", { title: userId ? `User id ${userId}` : undefined });
    setText(who, (typeof me.display_name === "string" && me.display_name) || userId);
    name.removeAttribute("title");
    setText(name, "Signed in as ", who);
  }
  $("account").hidden = false;
}

function startInbox(me) {
  stopInbox();
  setCsrfToken(me && me.csrf_token);
  showAccount(me);
  show("inbox");
  const heading = $("inbox-title");
  heading.tabIndex = -1;
  const tasks = new TaskTitles();
  inbox = new Inbox({
    groups: $("groups"),
    empty: $("empty"),
    summary: $("summary"),
    tasks,
    heading,
    announce,
    onUnauthorized: () => showSignIn("Your session has ended. Sign in again."),
    onWaiting: setWaiting,
  });
  inbox.refresh();
  answered = new AnsweredView({
    list: $("answered-list"),
    empty: $("answered-empty"),
    tasks,
    announce,
    onUnauthorized: () => showSignIn("Your session has ended. Sign in again."),
  });
  answered.refresh();
  live = connectLive(paths.events, {
    onChange: () => {
      if (inbox) inbox.refresh();
      if (answered) answered.refresh();
    },
    onState: (state) => {
      const before = $("connection").dataset.state;
      setConnection(state);
      if (before === "live" && state !== "live")
        announce("Live updates interrupted; reconnecting.");
      if (before === "reconnecting" && state === "live") announce("Live updates restored.");
    },
  });
}

async function boot() {
  show("loading");
  const me = await api("GET", paths.me);
  if (me.status === 401) {
    showSignIn();
  } else if (me.ok) {
    startInbox(me.body);
  } else {
    stopInbox();
    show("fatal");
    $("fatal-message").textContent = errorText(me, "Could not check your session");
    $("retry").focus();
  }
}

$("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("signin-token");
  const error = $("signin-error");
  const token = input.value.trim();
  if (!token) {
    $("signin-note").textContent = "";
    error.textContent = "Enter a personal access token.";
    input.focus();
    return;
  }
  error.textContent = "";
  $("signin-note").textContent = "";
  const result = await api("POST", paths.login, { token });
  // The token is exchanged for an HttpOnly cookie once; the page keeps no copy.
  input.value = "";
  if (result.ok) {
    announce("Signed in.");
    await boot();
    return;
  }
  error.textContent =
    result.status === 401 || result.status === 400
      ? "That token was not accepted. Check it and try again."
      : errorText(result, "Could not sign in");
  input.focus();
});

$("sign-out").addEventListener("click", async () => {
  await api("POST", paths.logout);
  showSignIn("You are signed out.");
  announce("Signed out.");
});

$("retry").addEventListener("click", () => boot());

// The header stays at the top; scrolling a control into view (Tab, a deep link) keeps it
// below the header (inbox.css: scroll-padding-top).
const masthead = document.querySelector(".masthead");
new ResizeObserver(() => {
  document.documentElement.style.setProperty("--masthead-height", `${masthead.offsetHeight}px`);
}).observe(masthead);

boot();
