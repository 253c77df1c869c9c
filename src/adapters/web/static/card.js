// One pending bundle: its context, questions, options, free text, Submit and Skip.

import { api, errorText, paths } from "./api.js";
import { ago, domId, h, joined } from "./dom.js";
import { closedWhy } from "./closed.js";
import { limitedTextField } from "./text.js";

const SEND_FAILED = "Your answer was not recorded";

/** What a closed card says: [after an answer, after a skip] for each way a bundle closes. */
const OUTCOMES = {
  won: ["Your answer was sent to the agent.", "You skipped this question."],
  // W2/W3: someone else's resolution won; what follows is theirs, never this page's.
  lost: [
    "Someone else answered first. Your answer was not used; this is what was recorded:",
    "Someone else skipped this question first. Your answer was not used.",
  ],
  inactive: Array(2).fill(
    "This question is no longer active (the agent moved on or the session ended). " +
      "Nothing was recorded.",
  ),
  gone: Array(2).fill("This question no longer exists or is no longer visible to you."),
};

/** Describe one recorded answer for people: selected labels and free text. */
/** The parts of a recorded answer, for h(): every label and the free text isolated. */
function describeAnswer(question, answer) {
  if (!answer) return ["(no answer)"];
  const labels = new Map(question.options.map((o) => [o.option_id, o.label || o.option_id]));
  const chosen = joined(
    answer.selected_options.map((id) => labels.get(id) ?? id),
    ", ",
  );
  const text = answer.custom_text ? ["“", answer.custom_text, "”"] : [];
  const parts = [chosen, text].filter((part) => part.length);
  return parts.length ? joined(parts, " — ").flat() : ["(no answer)"];
}

export class BundleCard {
  /**
   * @param bundle one L3 bundle from the pending listing
   * @param ctx {announce(text), onUnauthorized(), onClosed(card), onDismiss(card)}
   */
  constructor(bundle, ctx) {
    this.ctx = ctx;
    this.bundle = bundle;
    this.pendingId = bundle.pending_id;
    this.state = "open"; // open | stale | closed
    this.busy = false;
    this.dirty = false;
    this.seenAt = Date.now();
    this.id = domId("bundle", bundle.pending_id);
    this.el = this.build();
  }

  get createdAt() {
    return this.bundle.created_at;
  }

  /** A fresher copy of the same bundle from the listing (it is still pending). */
  update(bundle) {
    this.bundle = { ...bundle, questions: this.bundle.questions };
    this.seenAt = Date.now();
    if (this.state === "stale") {
      this.state = "open";
      this.staleNote.hidden = true;
    }
    this.tick();
  }

  /**
   * The listing no longer has this bundle: answered elsewhere, superseded or expired.
   * An untouched card leaves; a card holding the person's draft stays, marked, so nothing
   * they typed disappears under them. Returns true when the card was removed.
   */
  leftListing() {
    if (this.state === "closed" || this.state === "stale") return false;
    if (!this.dirty && !this.busy) {
      this.el.remove();
      return true;
    }
    if (this.busy) return false;
    this.state = "stale";
    this.staleNote.hidden = false;
    return false;
  }

  /** Refresh the "asked … ago" text from the server's age plus the time since we saw it. */
  tick() {
    const age = this.bundle.age_seconds + (Date.now() - this.seenAt) / 1000;
    this.ageEl.textContent = `Asked ${ago(age)}`;
  }

  build() {
    const b = this.bundle;
    const titles = b.questions.map(
      (q, i) => q.title || (b.questions.length > 1 ? `Question ${i + 1}` : "Question"),
    );
    this.ageEl = h("span", { class: "age" });
    this.formError = h("p", { class: "form-error", id: `${this.id}-error`, "aria-live": "polite" });
    this.submitButton = h("button", { type: "submit", class: "primary" }, "Submit answer");
    this.questionViews = b.questions.map((q, i) => this.buildQuestion(q, i));

    this.form = h(
      "form",
      { class: "answer-form", novalidate: true, "aria-describedby": `${this.id}-error` },
      this.questionViews.map((v) => v.el),
      this.formError,
      h("div", { class: "actions" }, this.submitButton),
    );
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submitAnswers();
    });
    this.form.addEventListener("input", () => {
      this.dirty = true;
    });
    this.form.addEventListener("change", () => {
      this.dirty = true;
    });

    this.skipView = this.buildSkip();
    this.staleNote = this.buildStaleNote(
      "This question left the inbox while you were working on it: someone may have answered it " +
        "already. Submitting shows you what was recorded; nothing you typed is lost.",
    );

    const el = this.buildArticle(
      "bundle",
      joined(titles, " · "),
      b.questions.length > 1 ? ` · ${b.questions.length} questions` : "",
      this.staleNote,
      this.form,
      this.skipView.el,
    );
    this.tick();
    this.updateBlocked();
    return el;
  }

  /** The note a card shows when its bundle left the listing while the person had a draft. */
  buildStaleNote(text) {
    return h(
      "div",
      { class: "stale-note", hidden: true },
      h("p", {}, text),
      h("button", { type: "button", class: "secondary", onclick: () => this.dismiss() }, "Dismiss"),
    );
  }

  /** The card's article: its heading, age and `meta`, the agent's context, then `parts`. */
  buildArticle(className, title, meta, ...parts) {
    const b = this.bundle;
    return h(
      "article",
      {
        class: className,
        id: this.id,
        "aria-labelledby": `${this.id}-title`,
        dataset: { pendingId: b.pending_id },
      },
      h(
        "header",
        { class: "bundle-head" },
        h("h5", { id: `${this.id}-title` }, title),
        h("p", { class: "meta" }, this.ageEl, meta),
      ),
      b.context
        ? h(
            "div",
            { class: "context" },
            h("p", { class: "context-label" }, "Context from the agent"),
            h("p", { class: "context-text" }, b.context),
          )
        : null,
      ...parts,
    );
  }

  buildQuestion(question, index) {
    const qid = `${this.id}-q${index}`;
    const legend = h(
      "legend",
      {},
      question.title ? h("span", { class: "q-title" }, question.title) : null,
      question.title ? h("span", { class: "visually-hidden" }, ": ") : null,
      h("span", { class: "q-prompt" }, question.prompt || "(this question has no text)"),
    );
    const boxes = question.options.map((option, j) => {
      const oid = `${qid}-o${j}`;
      // The option's label names the checkbox; its description describes it, so a screen
      // reader says "Split screen, checkbox" and then the explanation.
      const input = h("input", {
        type: "checkbox",
        id: oid,
        name: `${qid}-options`,
        value: option.option_id,
        "aria-labelledby": `${oid}-label`,
        "aria-describedby": option.description ? `${oid}-desc` : undefined,
      });
      const label = h(
        "label",
        { class: "option", for: oid },
        input,
        h(
          "span",
          { class: "option-text" },
          h(
            "span",
            { class: "option-label", id: `${oid}-label` },
            option.label || option.option_id,
          ),
          option.description
            ? h("span", { class: "option-desc", id: `${oid}-desc` }, option.description)
            : null,
        ),
      );
      return { input, label };
    });
    const { textarea, message, limit, meta } = limitedTextField(`${qid}-text`, qid, () =>
      this.updateBlocked(),
    );
    const el = h(
      "fieldset",
      { class: "question", dataset: { questionId: question.question_id } },
      legend,
      question.status && question.status !== "pending"
        ? h("p", { class: "hint" }, `This part is already ${question.status}.`)
        : null,
      boxes.length
        ? h("p", { class: "hint" }, "Choose any that apply, add your own words, or both.")
        : h("p", { class: "hint" }, "No options were offered; answer in your own words."),
      boxes.length
        ? h(
            "div",
            { class: "options" },
            boxes.map((b) => b.label),
          )
        : null,
      h(
        "div",
        { class: "free-text" },
        h(
          "label",
          { for: `${qid}-text` },
          boxes.length ? "Your own answer (optional)" : "Your answer",
        ),
        textarea,
        meta,
      ),
    );
    return { el, question, boxes, textarea, message, limit };
  }

  buildSkip() {
    const rid = `${this.id}-skip`;
    const { textarea, message, limit, meta } = limitedTextField(`${rid}-reason`, rid, () =>
      this.updateBlocked(),
    );
    const button = h(
      "button",
      { type: "button", class: "secondary", onclick: () => this.submitSkip() },
      "Skip",
    );
    const details = h(
      "details",
      { class: "skip" },
      h(
        "summary",
        {},
        this.bundle.questions.length > 1
          ? "Skip these questions instead…"
          : "Skip this question instead…",
      ),
      h(
        "div",
        { class: "skip-body" },
        h(
          "p",
          { class: "hint" },
          "The agent is told the question was skipped, with your reason if you give one.",
        ),
        h("label", { for: `${rid}-reason` }, "Reason for skipping (optional)"),
        textarea,
        meta,
        button,
      ),
    );
    textarea.addEventListener("input", () => {
      this.dirty = true;
    });
    return { el: details, textarea, message, limit, button };
  }

  /** W4a: block Submit while any answer is over the limit, and Skip while the reason is. */
  updateBlocked() {
    if (!this.questionViews || !this.skipView) return;
    const over = this.questionViews.some((v) => v.limit.isOver());
    this.setBlocked(this.submitButton, over || this.busy);
    this.setBlocked(this.skipView.button, this.skipView.limit.isOver() || this.busy);
    if (over) {
      this.formError.textContent =
        "An answer is over the 2000-character limit. Shorten it to submit.";
      this.formError.dataset.source = "limit";
    } else if (this.formError.dataset.source === "limit") {
      this.formError.textContent = "";
      delete this.formError.dataset.source;
    }
  }

  // aria-disabled rather than disabled: the button stays focusable, so a keyboard user can
  // still reach it and hear why it does nothing.
  setBlocked(button, blocked) {
    if (blocked) button.setAttribute("aria-disabled", "true");
    else button.removeAttribute("aria-disabled");
  }

  collectAnswers() {
    return this.questionViews.map((v) => ({
      question_id: v.question.question_id,
      selected_options: v.boxes.filter((b) => b.input.checked).map((b) => b.input.value),
      custom_text: v.textarea.value,
    }));
  }

  async submitAnswers() {
    if (this.busy || this.state === "closed") return;
    const overView = this.questionViews.find((v) => v.limit.isOver());
    if (overView) {
      overView.textarea.focus();
      return;
    }
    const answers = this.collectAnswers();
    const nothing = answers.every(
      (a) => a.selected_options.length === 0 && a.custom_text.trim() === "",
    );
    if (nothing) {
      this.showFormError("Choose an option or write an answer first, or skip the question.");
      return;
    }
    await this.send({ answers }, answers);
  }

  async submitSkip() {
    if (this.busy || this.state === "closed") return;
    if (this.skipView.limit.isOver()) {
      this.skipView.textarea.focus();
      return;
    }
    await this.send({ rejected: true, reject_reason: this.skipView.textarea.value }, []);
  }

  async send(body, sentAnswers) {
    this.handleResult(await this.post(paths.respond(this.pendingId), body), sentAnswers);
  }

  /** POST `body` to `path` with the card busy meanwhile; the earlier server messages cleared. */
  async post(path, body) {
    this.clearServerErrors();
    this.setBusy(true);
    const result = await api("POST", path, body);
    this.setBusy(false);
    return result;
  }

  handleResult(result, sentAnswers) {
    const body = result.body ?? {};
    if (result.ok) {
      // W2: a `claimed: false` success means someone else settled it first: close like a 409.
      // W3: show the winner's recorded response from the body, never what this page sent.
      const lost = body.claimed === false;
      this.close(lost ? "lost" : "won", body.status, body.response);
      return;
    }
    this.handleFailure(result, SEND_FAILED, {
      inactive: (closedReason) => this.close("inactive", undefined, undefined, closedReason),
      gone: () => this.close("gone"),
      invalid: () => this.showValidationError(body, sentAnswers),
    });
  }

  /**
   * A submission that did not succeed, as every card answers it: a 409 calls `inactive` (with
   * the closed reason, when the server gave one) and a 404 `gone`, both to close the card; a
   * 401 hands over to sign-in; a 400 calls `invalid` (its body names the field); anything
   * else is a form error, `notRecorded` and why, so the person can try again.
   */
  handleFailure(result, notRecorded, { inactive, gone, invalid }) {
    switch (result.status) {
      case 409:
        inactive(result.closedReason);
        return;
      case 404:
        gone();
        return;
      case 401:
        this.ctx.onUnauthorized();
        return;
      case 400:
        invalid();
        return;
      default:
        this.showFormError(`${errorText(result, notRecorded)} Try again.`);
    }
  }

  /**
   * R10: a 400's message names the offending field; its `field` key (#32) is that field's JSON
   * path, the same paths the answer form model places errors by: `answers[i]…` (0-based, the
   * order this card sent) next to question i, `reject_reason` next to the skip reason, anything
   * else for the whole form. The message itself is never parsed.
   */
  showValidationError(body, sentAnswers) {
    const message =
      typeof body.error === "string" && body.error ? body.error : "The answer was not accepted.";
    const field = typeof body.field === "string" ? body.field : "";
    const path = /^answers\[(\d+)\]/.exec(field);
    const index = path ? Number(path[1]) : -1;

    let view = null;
    if (index >= 0 && index < sentAnswers.length) {
      const questionId = sentAnswers[index].question_id;
      view = this.questionViews.find((v) => v.question.question_id === questionId) ?? null;
    }
    if (view) {
      this.showFieldError(view.message, view.textarea, message);
    } else if (field === "reject_reason") {
      this.skipView.el.open = true;
      this.showFieldError(this.skipView.message, this.skipView.textarea, message);
    } else {
      this.showFormError(message);
    }
  }

  showFieldError(messageEl, textarea, text) {
    messageEl.textContent = text;
    messageEl.dataset.source = "server";
    textarea.setAttribute("aria-invalid", "true");
    textarea.focus();
  }

  showFormError(text) {
    this.formError.textContent = text;
    this.formError.dataset.source = "server";
    this.ctx.announce(text);
  }

  clearServerErrors() {
    for (const el of this.el.querySelectorAll('[data-source="server"]')) {
      el.textContent = "";
      delete el.dataset.source;
    }
    for (const v of [...this.questionViews, this.skipView]) v.limit.refresh();
  }

  setBusy(busy) {
    this.busy = busy;
    this.el.setAttribute("aria-busy", busy ? "true" : "false");
    this.updateBlocked();
  }

  /** Replace the form with the outcome; the card stays until dismissed. */
  close(outcome, status, response, closedReason = "") {
    const hadFocus = this.el.contains(document.activeElement);
    this.state = "closed";
    const rejected = status === "rejected" || (response && response.rejected === true);
    const [answeredTitle, rejectedTitle] = OUTCOMES[outcome];
    // Issue #30: a late answer is told why the question closed.
    const title = closedReason
      ? `This question was closed without an answer: ${closedWhy(closedReason)}. Nothing was recorded.`
      : rejected
        ? rejectedTitle
        : answeredTitle;

    const list = h("dl", { class: "recorded" });
    if (response && !rejected) {
      const byId = new Map((response.answers ?? []).map((a) => [a.question_id, a]));
      this.bundle.questions.forEach((q, i) => {
        list.append(
          h("dt", {}, q.title || q.prompt || `Question ${i + 1}`),
          h("dd", {}, describeAnswer(q, byId.get(q.question_id))),
        );
      });
    } else if (response && rejected && response.reject_reason) {
      list.append(h("dt", {}, "Reason"), h("dd", {}, response.reject_reason));
    }
    this.skipView.el.remove();
    this.showOutcome(outcome, title, list.childElementCount ? list : null, hadFocus);
  }

  /**
   * Put the outcome (styled `result-${outcome}`) where the form was: `title`, the recorded
   * `list` (or null) and a Dismiss button; announced, and focused when the card `hadFocus`.
   */
  showOutcome(outcome, title, list, hadFocus) {
    const result = h(
      "section",
      { class: `result result-${outcome}`, tabindex: "-1", "aria-label": "Outcome" },
      h("p", { class: "result-title" }, title),
      list,
      h("button", { type: "button", class: "secondary", onclick: () => this.dismiss() }, "Dismiss"),
    );
    this.form.remove();
    this.staleNote.remove();
    this.el.classList.add("closed");
    this.el.append(result);
    this.ctx.announce(title);
    this.ctx.onClosed(this);
    if (hadFocus) result.focus();
  }

  dismiss() {
    this.ctx.onDismiss(this);
  }
}
