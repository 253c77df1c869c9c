// One pending approval request (issue #33): the action verbatim, its reason, digest, votes so
// far and who may decide, then Approve / Deny with a comment and, optionally, "and allow the
// same action for N minutes" (a standing approval). The decision goes to
// POST /api/v1/approvals/{id}/decision: the one resolver, so quorum and veto apply.

import { paths } from "./api.js";
import { BundleCard } from "./card.js";
import { closedWhy } from "./closed.js";
import { h } from "./dom.js";
import { limitedTextField } from "./text.js";

const SEND_FAILED = "Your decision was not recorded";
export const DEFAULT_STANDING_MINUTES = 30;
export const MAX_STANDING_MINUTES = 7 * 24 * 60;

/** JSON with keys sorted at every depth, indented by two: how the server shows arguments. */
function sortedJson(value) {
  const sort = (v) => {
    if (Array.isArray(v)) return v.map(sort);
    if (v && typeof v === "object") {
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sort(v[k])]),
      );
    }
    return v;
  };
  return JSON.stringify(sort(value), null, 2);
}

/** The action exactly as it will run: its name and every argument. */
export function actionText(action) {
  return `Action: ${action.name}\nArguments:\n${sortedJson(action.arguments ?? {})}`;
}

/** "sha256:1a2b3c4d5e6f…": enough to compare with what the agent logged. */
export function shortDigest(digest) {
  const [kind, hex = ""] = String(digest ?? "").split(":");
  return hex ? `${kind}:${hex.slice(0, 12)}…` : String(digest ?? "");
}

/** "1 of 2 approvals". */
export function approvalsText(approvals, required) {
  return `${approvals} of ${required} approval${required === 1 ? "" : "s"}`;
}

function candidatesText(candidates) {
  const users = candidates?.users ?? [];
  const groups = (candidates?.groups ?? []).map((g) => `group ${g}`);
  const all = [...users, ...groups];
  return all.length ? all.join(", ") : "anyone who can see this task";
}

export class ApprovalCard extends BundleCard {
  build() {
    const b = this.bundle;
    const approval = b.approval;
    this.ageEl = h("span", { class: "age" });
    this.formError = h("p", { class: "form-error", id: `${this.id}-error`, "aria-live": "polite" });
    this.votesEl = h("span", { class: "approval-votes" });
    this.comment = this.buildComment();
    this.standing = this.buildStanding();
    this.approveButton = h(
      "button",
      { type: "button", class: "primary", onclick: () => this.decide("approve") },
      "Approve",
    );
    this.denyButton = h(
      "button",
      { type: "button", class: "secondary deny", onclick: () => this.decide("deny") },
      "Deny",
    );
    this.form = h(
      "form",
      { class: "answer-form", novalidate: true, "aria-describedby": `${this.id}-error` },
      this.comment.el,
      this.standing.el,
      this.formError,
      h("div", { class: "actions" }, this.approveButton, this.denyButton),
    );
    this.form.addEventListener("submit", (event) => event.preventDefault());
    for (const kind of ["input", "change"]) {
      this.form.addEventListener(kind, () => {
        this.dirty = true;
      });
    }
    this.staleNote = this.buildStaleNote(
      "This request left the inbox while you were working on it: it may have been decided " +
        "already. Deciding shows you what was recorded.",
    );
    const el = this.buildArticle(
      "bundle approval",
      `Approve ${approval.action.name}?`,
      " · approval request",
      approval.reason ? h("p", { class: "approval-reason" }, approval.reason) : null,
      h("pre", { class: "approval-action", "aria-label": "The action" }, actionText(approval.action)),
      h(
        "p",
        { class: "approval-facts" },
        this.votesEl,
        " · digest ",
        h("code", { title: approval.action_digest }, shortDigest(approval.action_digest)),
        " · may decide: ",
        h("span", { class: "approval-candidates" }, candidatesText(approval.candidates)),
      ),
      this.staleNote,
      this.form,
    );
    this.showVotes();
    this.tick();
    this.updateBlocked();
    return el;
  }

  /** The votes so far, from the freshest listing. */
  showVotes() {
    const approval = this.bundle.approval;
    this.votesEl.textContent = approvalsText(approval.approvals ?? 0, approval.required_approvals);
  }

  update(bundle) {
    super.update(bundle);
    this.showVotes();
  }

  buildComment() {
    const cid = `${this.id}-comment`;
    const { textarea, message, limit, meta } = limitedTextField(cid, cid, () =>
      this.updateBlocked(),
    );
    const el = h(
      "div",
      { class: "free-text" },
      h("label", { for: cid }, "Comment (optional, told to the agent)"),
      textarea,
      meta,
    );
    return { el, textarea, message, limit };
  }

  buildStanding() {
    const sid = `${this.id}-standing`;
    const checkbox = h("input", { type: "checkbox", id: `${sid}-on` });
    const minutes = h("input", {
      type: "number",
      id: `${sid}-minutes`,
      min: "1",
      max: String(MAX_STANDING_MINUTES),
      step: "1",
      value: String(DEFAULT_STANDING_MINUTES),
      "aria-label": "Minutes",
      "aria-describedby": `${sid}-msg`,
    });
    const message = h("p", { class: "field-error", id: `${sid}-msg`, "aria-live": "polite" });
    const el = h(
      "div",
      { class: "approval-standing-field" },
      h(
        "div",
        { class: "approval-standing" },
        checkbox,
        h("label", { for: `${sid}-on` }, "and allow the same action for"),
        minutes,
        h("label", { for: `${sid}-minutes` }, "minutes"),
      ),
      h(
        "p",
        { class: "hint" },
        "Only with Approve: later requests for exactly this action in this workspace are " +
          "approved at once until then, recorded as approved by you. You can revoke it.",
      ),
      message,
    );
    minutes.addEventListener("input", () => {
      checkbox.checked = true;
    });
    return { el, checkbox, minutes, message };
  }

  updateBlocked() {
    if (!this.comment || !this.approveButton) return;
    const over = this.comment.limit.isOver();
    this.setBlocked(this.approveButton, over || this.busy);
    this.setBlocked(this.denyButton, over || this.busy);
  }

  clearServerErrors() {
    for (const el of this.el.querySelectorAll('[data-source="server"]')) {
      el.textContent = "";
      delete el.dataset.source;
    }
    this.comment.limit.refresh();
  }

  /** The standing approval's minutes when asked for (approve only), else undefined. */
  standingMinutes(decision) {
    if (decision !== "approve" || !this.standing.checkbox.checked) return undefined;
    const value = Number(this.standing.minutes.value);
    if (!Number.isInteger(value) || value < 1 || value > MAX_STANDING_MINUTES) return NaN;
    return value;
  }

  async decide(decision) {
    if (this.busy || this.state === "closed") return;
    if (this.comment.limit.isOver()) {
      this.comment.textarea.focus();
      return;
    }
    const minutes = this.standingMinutes(decision);
    if (Number.isNaN(minutes)) {
      this.showFieldError(
        this.standing.message,
        this.standing.minutes,
        `Allow for a whole number of minutes from 1 to ${MAX_STANDING_MINUTES}.`,
      );
      return;
    }
    const body = { decision, comment: this.comment.textarea.value };
    if (minutes !== undefined) body.allow_for_minutes = minutes;
    this.handleDecision(await this.post(paths.decision(this.pendingId), body), decision);
  }

  handleDecision(result, decision) {
    const body = result.body ?? {};
    if (result.ok && body.approval) {
      this.closeWith(body.approval, body.counted === true, decision);
      return;
    }
    this.handleFailure(result, SEND_FAILED, {
      inactive: (closedReason) =>
        this.closeTitle(
          closedReason
            ? `This request was closed without a decision: ${closedWhy(closedReason)}. ` +
                "Nothing was recorded."
            : "This request is no longer active. Nothing was recorded.",
        ),
      gone: () => this.closeTitle("This request no longer exists or is no longer visible to you."),
      invalid: () => this.showRefusal(body),
    });
  }

  /** A 400 names its field: the comment, the minutes (or constraints), or the whole form. */
  showRefusal(body) {
    const message =
      typeof body.error === "string" && body.error ? body.error : "The decision was not accepted.";
    const field = typeof body.field === "string" ? body.field : "";
    if (field === "comment") {
      this.showFieldError(this.comment.message, this.comment.textarea, message);
    } else if (field.startsWith("allow_for_minutes") || field.startsWith("standing")) {
      this.showFieldError(this.standing.message, this.standing.minutes, message);
    } else {
      this.showFormError(message);
    }
  }

  /** The request's state after this person's decision, from the view the server returned. */
  closeWith(view, counted, decision) {
    const verb = decision === "approve" ? "approval" : "denial";
    const tally = approvalsText(
      view.votes.filter((v) => v.decision === "approve").length,
      view.required_approvals,
    );
    let title;
    if (view.status === "pending") {
      title = counted
        ? `Your ${verb} was recorded: ${tally}. The request waits for more approvals.`
        : `You have already voted on this request; your first vote counts (${tally}).`;
    } else if (view.status === "closed") {
      title = `This request was closed without a decision: ${closedWhy(view.closed_reason)}.`;
    } else {
      const by = view.decided_by?.display_name || "someone";
      const outcome = view.status === "approved" ? "Approved" : "Denied";
      title = counted
        ? `${outcome}. The agent was told.`
        : `Already decided: ${outcome.toLowerCase()} by ${by}. Your vote was not counted.`;
    }
    const list = h("dl", { class: "recorded" });
    if (view.status === "approved" || view.status === "denied") {
      list.append(
        h("dt", {}, "Decision"),
        h("dd", {}, view.status),
        h("dt", {}, "Decided by"),
        h("dd", {}, view.decided_by?.display_name || "someone"),
      );
      if (view.comment) list.append(h("dt", {}, "Comment"), h("dd", {}, view.comment));
    }
    this.closeTitle(title, list.childElementCount ? list : null, counted);
  }

  closeTitle(title, list = null, won = false) {
    const hadFocus = this.el.contains(document.activeElement);
    this.state = "closed";
    this.showOutcome(won ? "won" : "lost", title, list, hadFocus);
  }
}
