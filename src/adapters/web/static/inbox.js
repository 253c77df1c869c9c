// The list of pending bundles, grouped by task and session, oldest first (L6), kept in step
// with the server by re-reading the pending listing whenever something may have changed.

import { api, paths } from "./api.js";
import { ApprovalCard } from "./approval.js";
import { BundleCard } from "./card.js";
import { domId, h, setText } from "./dom.js";
import { listing, Reloading } from "./reload.js";

const MAX_PAGES = 10; // pages of up to 200 bundles and CLARION_MAX_LIST_BYTES: more than a person works through

/** "1 question", "3 questions". */
function questions(n) {
  return `${n} question${n === 1 ? "" : "s"}`;
}

/**
 * What is waiting, counted in questions — a card (one request from an agent) can hold several —
 * and, when that differs, in requests: "1 question waiting", "3 questions waiting in
 * 2 requests".
 */
function waitingText(questionCount, requestCount) {
  const requests =
    requestCount === questionCount
      ? ""
      : ` in ${requestCount} request${requestCount === 1 ? "" : "s"}`;
  return `${questions(questionCount)} waiting${requests}`;
}

/** A sortable form of an RFC 3339 UTC time: the server trims trailing fractional zeros
 * ("…:05Z", "…:05.25Z"), so the raw strings do not sort; microseconds are kept (Date is ms). */
function timeKey(text) {
  const [whole, fraction = ""] = text.replace(/Z$/, "").split(".");
  return `${whole}.${fraction.padEnd(6, "0")}`;
}

/** L6: oldest first, then by pending_id — the order the listing itself uses. */
function byAge(a, b) {
  const ka = timeKey(a.createdAt);
  const kb = timeKey(b.createdAt);
  if (ka !== kb) return ka < kb ? -1 : 1;
  return a.pendingId < b.pendingId ? -1 : a.pendingId > b.pendingId ? 1 : 0;
}

/** Make `container`'s children exactly `nodes`, moving only nodes that are out of place
 * (moving a node would take keyboard focus away from whatever the person is typing in). */
function placeChildren(container, nodes) {
  nodes.forEach((node, i) => {
    const current = container.children[i];
    if (current !== node) container.insertBefore(node, current ?? null);
  });
  while (container.children.length > nodes.length) container.lastElementChild.remove();
}

export class Inbox extends Reloading {
  /**
   * @param ui {groups, empty, summary, tasks (a TaskTitles), announce(text), onUnauthorized(),
   *   onWaiting(questions) — told the number of questions waiting after every change}
   */
  constructor(ui) {
    super();
    this.ui = ui;
    this.cards = new Map();
    this.taskGroups = new Map();
    this.loaded = false;
    this.clock = setInterval(() => this.cards.forEach((c) => c.tick()), 30_000);
    // A notification's deep link is <inbox>/#<pending_id>: open and focus that bundle once it
    // is listed (and again whenever the hash changes).
    this.targeted = "";
    this.onHash = () => {
      this.targeted = "";
      this.focusTarget();
    };
    window.addEventListener("hashchange", this.onHash);
  }

  /** The pending id the location's hash names, or "". */
  static hashTarget() {
    const raw = window.location.hash.slice(1);
    try {
      return decodeURIComponent(raw);
    } catch {
      return raw;
    }
  }

  focusTarget() {
    const target = Inbox.hashTarget();
    if (!target || target === this.targeted) return;
    const card = this.cards.get(target);
    if (!card) return;
    this.targeted = target;
    for (const other of this.cards.values()) other.el.classList.remove("targeted");
    card.el.classList.add("targeted");
    card.el.setAttribute("tabindex", "-1");
    card.el.scrollIntoView({ block: "center" });
    card.el.focus();
  }

  stop() {
    super.stop();
    clearInterval(this.clock);
    window.removeEventListener("hashchange", this.onHash);
    this.ui.groups.replaceChildren();
    this.cards.clear();
    this.taskGroups.clear();
  }

  async load() {
    const bundles = [];
    let cursor = "";
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const result = await api("GET", paths.pending(cursor));
      if (this.stopped) return;
      const body = listing(result, this.ui, "bundles", "Could not load the questions");
      if (!body) return;
      bundles.push(...body.bundles);
      cursor = body.next_cursor;
      if (!cursor) break;
    }
    await this.ui.tasks.learn(
      bundles.map((b) => b.task_id),
      () => this.stopped,
    );
    if (this.stopped) return;
    this.reconcile(bundles);
  }

  reconcile(bundles) {
    const listed = new Set();
    let added = 0; // questions, not cards: a card can hold several
    for (const bundle of bundles) {
      listed.add(bundle.pending_id);
      const card = this.cards.get(bundle.pending_id);
      if (card) {
        card.update(bundle);
      } else {
        // Issue #33: an approval request has its own card.
        const Card = bundle.approval ? ApprovalCard : BundleCard;
        this.cards.set(
          bundle.pending_id,
          new Card(bundle, {
            announce: (text) => this.ui.announce(text),
            onUnauthorized: () => this.ui.onUnauthorized(),
            onClosed: () => this.layout(),
            onDismiss: (c) => this.remove(c),
          }),
        );
        added += bundle.questions.length;
      }
    }
    let left = 0;
    for (const [pendingId, card] of this.cards) {
      if (!listed.has(pendingId) && card.leftListing()) {
        this.cards.delete(pendingId);
        left += card.bundle.questions.length;
      }
    }
    this.layout();
    this.focusTarget();
    if (this.loaded) {
      const news = [];
      if (added) news.push(`${added} new question${added === 1 ? "" : "s"} arrived.`);
      if (left) news.push(`${questions(left)} ${left === 1 ? "was" : "were"} settled elsewhere.`);
      if (news.length) this.ui.announce(news.join(" "));
    }
    this.loaded = true;
  }

  remove(card) {
    const next = this.followingCard(card);
    card.el.remove();
    this.cards.delete(card.pendingId);
    this.layout();
    (next ? next.el.querySelector("input, textarea, button") : this.ui.heading)?.focus();
  }

  followingCard(card) {
    const ordered = [...this.cards.values()].sort(byAge);
    const at = ordered.indexOf(card);
    return ordered[at + 1] ?? ordered[at - 1] ?? null;
  }

  taskGroup(taskId) {
    let group = this.taskGroups.get(taskId);
    if (!group) {
      const heading = h("h3", { id: domId("task", taskId) });
      const sessions = h("div", { class: "sessions" });
      const el = h(
        "section",
        { class: "task-group", "aria-labelledby": heading.id, dataset: { taskId } },
        heading,
        sessions,
      );
      group = { el, heading, sessions, sessionGroups: new Map() };
      this.taskGroups.set(taskId, group);
    }
    const title = this.ui.tasks.title(taskId);
    if (title) setText(group.heading, "Task: ", title);
    else setText(group.heading, "Task ", taskId || "(unknown)");
    return group;
  }

  sessionGroup(task, sessionId) {
    let group = task.sessionGroups.get(sessionId);
    if (!group) {
      const list = h("div", { class: "bundles" });
      const el = h(
        "div",
        { class: "session-group", dataset: { sessionId } },
        h(
          "h4",
          {},
          `Session ${sessionId.slice(0, 8)}`,
          h("span", { class: "visually-hidden" }, ` (${sessionId})`),
        ),
        list,
      );
      group = { el, list };
      task.sessionGroups.set(sessionId, group);
    }
    return group;
  }

  layout() {
    const ordered = [...this.cards.values()].sort(byAge);
    // Groups appear in the order of their oldest bundle, so the longest-waiting agent is first.
    const tasks = new Map();
    for (const card of ordered) {
      const { task_id: taskId, session_id: sessionId } = card.bundle;
      if (!tasks.has(taskId)) tasks.set(taskId, new Map());
      const sessions = tasks.get(taskId);
      if (!sessions.has(sessionId)) sessions.set(sessionId, []);
      sessions.get(sessionId).push(card);
    }
    const taskEls = [];
    for (const [taskId, sessions] of tasks) {
      const task = this.taskGroup(taskId);
      const sessionEls = [];
      for (const [sessionId, cards] of sessions) {
        const session = this.sessionGroup(task, sessionId);
        placeChildren(
          session.list,
          cards.map((c) => c.el),
        );
        sessionEls.push(session.el);
      }
      placeChildren(task.sessions, sessionEls);
      // One session in view: its heading would only repeat the task's, so only assistive
      // technology hears it.
      task.el.classList.toggle("single-session", sessionEls.length === 1);
      for (const id of [...task.sessionGroups.keys()])
        if (!sessions.has(id)) task.sessionGroups.delete(id);
      taskEls.push(task.el);
    }
    placeChildren(this.ui.groups, taskEls);
    for (const id of [...this.taskGroups.keys()]) if (!tasks.has(id)) this.taskGroups.delete(id);

    // Waiting: still listed and not settled here (a card closed here, or one that left the
    // listing while someone was typing in it, is not).
    const waiting = ordered.filter((c) => c.state === "open");
    const count = waiting.reduce((sum, c) => sum + c.bundle.questions.length, 0);
    this.ui.summary.textContent = count
      ? `${waitingText(count, waiting.length)}, oldest first.`
      : "";
    this.ui.empty.hidden = ordered.length > 0;
    this.ui.onWaiting(count);
  }
}
