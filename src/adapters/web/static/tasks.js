// Task titles, for the headings of the pending list and the Answered view (neither listing
// carries them): learnt from GET /api/v1/tasks, shared by both lists, asked for only once per
// task.

import { api, paths } from "./api.js";

const MAX_TASK_PAGES = 40; // 40 pages of 50 (the default page size)

export class TaskTitles {
  constructor() {
    this.titles = new Map();
    this.queue = Promise.resolve();
  }

  /** The task's title, or "" when it is unknown (the caller shows the id instead). */
  title(taskId) {
    return this.titles.get(taskId) ?? "";
  }

  /**
   * Learn the titles of `taskIds` that are not known yet. Calls run one after another, so the
   * two lists loading together do not page through the task list twice.
   * @param stopped () => true once the caller no longer wants the answer
   */
  learn(taskIds, stopped = () => false) {
    const run = this.queue.then(() => this.fetch(taskIds, stopped));
    this.queue = run.catch(() => {});
    return run;
  }

  async fetch(taskIds, stopped) {
    const known = () => taskIds.every((id) => this.titles.has(id));
    // The task list is paged: follow its cursor until every task asked about is known.
    let cursor = "";
    for (let page = 0; page < MAX_TASK_PAGES && !known(); page += 1) {
      const result = await api("GET", paths.tasks(cursor));
      if (stopped()) return;
      const tasks =
        result.ok && result.body && Array.isArray(result.body.tasks) ? result.body.tasks : [];
      for (const task of tasks) {
        if (task && typeof task.id === "string") this.titles.set(task.id, task.title || "");
      }
      cursor =
        result.ok && result.body && typeof result.body.next_cursor === "string"
          ? result.body.next_cursor
          : "";
      if (!cursor) break;
    }
    // A host without the tasks route (or a task it does not list) shows the id instead;
    // remember that, so the next refresh does not ask again.
    for (const id of taskIds) if (!this.titles.has(id)) this.titles.set(id, "");
  }
}
