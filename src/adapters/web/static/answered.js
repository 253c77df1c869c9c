// The "Answered" view (issue #20): the settled bundles this person may see, newest first —
// what was asked, what was answered, who answered, where and when — and (issue #30) the ones
// closed without an answer, with why — re-read from GET /api/v1/clarification/resolved
// whenever the live stream says something changed.

import { api, paths } from "./api.js";
import { closedWhy } from "./closed.js";
import { h, joined } from "./dom.js";
import { listing, Reloading } from "./reload.js";

const SHOWN = 50; // the newest 50; the CLI and the REST route page through the rest

const SURFACES = {
  rest: "the REST API",
  inbox: "the inbox",
  cli: "the command line",
  mcp: "MCP",
  agent_client: "the agent's own client",
  mcp_app: "the question card in the agent's app",
  email: "e-mail",
  slack: "Slack",
  deadline: "a deadline",
  unknown: "an unrecorded place",
};

function when(text) {
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? text : date.toLocaleString();
}

function who(resolvedBy) {
  const name = resolvedBy.display_name || resolvedBy.identity_id || "someone unrecorded";
  return resolvedBy.kind === "agent" ? `${name} (an agent)` : name;
}

/** Each answer with its option labels (ids when a label is missing) and free text. */
function answerLines(bundle) {
  const byQuestion = new Map(bundle.questions.map((q) => [q.question_id, q]));
  return bundle.response.answers.map((answer) => {
    const question = byQuestion.get(answer.question_id);
    const labels = answer.selected_options.map((id) => {
      const option = question && question.options.find((o) => o.option_id === id);
      return option && option.label ? option.label : id;
    });
    if (answer.custom_text) labels.push(`“${answer.custom_text}”`);
    return h(
      "li",
      {},
      h("span", { class: "answered-prompt", text: question ? question.prompt : answer.question_id }),
      " → ",
      ...joined(labels.length ? labels : ["(no answer)"], ", "),
    );
  });
}

/** Where the question came from: its task (the id when the title is unknown) and session,
 * named like the pending list's headings. */
function origin(bundle, tasks) {
  const title = tasks.title(bundle.task_id);
  const session = bundle.session_id;
  return h(
    "p",
    { class: "answered-origin meta" },
    title ? "Task: " : "Task ",
    title || bundle.task_id,
    " · Session ",
    h("span", { title: session, text: session.slice(0, 8) }),
  );
}

/** Issue #30: a question that left the inbox without an answer, and why. */
function closedEntry(bundle, tasks) {
  return h(
    "li",
    { class: "answered-item answered-closed", dataset: { pendingId: bundle.pending_id } },
    origin(bundle, tasks),
    h(
      "p",
      { class: "answered-who" },
      h("strong", { text: "Closed without an answer" }),
      " — ",
      h("span", { class: "answered-reason", text: closedWhy(bundle.closed_reason) }),
      ", ",
      h("time", { datetime: bundle.closed_at, text: when(bundle.closed_at) }),
    ),
    h("p", { class: "meta", text: bundle.questions.map((q) => q.prompt).join(" · ") }),
  );
}

function entry(bundle, tasks) {
  if (bundle.status === "closed") return closedEntry(bundle, tasks);
  const rejected = bundle.status === "rejected";
  return h(
    "li",
    { class: "answered-item", dataset: { pendingId: bundle.pending_id } },
    origin(bundle, tasks),
    h(
      "p",
      { class: "answered-who" },
      h("strong", { text: rejected ? "Rejected" : "Answered" }),
      " by ",
      h("span", { class: "answered-by", text: who(bundle.resolved_by) }),
      " via ",
      h("span", { class: "answered-surface", text: SURFACES[bundle.resolved_by.surface] ?? bundle.resolved_by.surface }),
      ", ",
      h("time", { datetime: bundle.resolved_at, text: when(bundle.resolved_at) }),
    ),
    rejected
      ? h("p", { class: "meta", text: bundle.questions.map((q) => q.prompt).join(" · ") })
      : h("ul", { class: "answered-answers" }, ...answerLines(bundle)),
  );
}

export class AnsweredView extends Reloading {
  /** @param ui {list, empty, tasks (a TaskTitles), announce(text), onUnauthorized()} */
  constructor(ui) {
    super();
    this.ui = ui;
  }

  stop() {
    super.stop();
    this.ui.list.replaceChildren();
  }

  async load() {
    const result = await api("GET", paths.resolved(SHOWN));
    if (this.stopped) return;
    const body = listing(result, this.ui, "bundles", "Could not load the answered questions");
    if (!body) return;
    const bundles = body.bundles;
    await this.ui.tasks.learn(
      bundles.map((b) => b.task_id),
      () => this.stopped,
    );
    if (this.stopped) return;
    this.ui.list.replaceChildren(...bundles.map((b) => entry(b, this.ui.tasks)));
    this.ui.empty.hidden = bundles.length > 0;
  }
}
