// What the inbox's two live lists share (the pending list and the Answered view): re-reads
// that coalesce, and the checks every read of a listing makes.

import { errorText } from "./api.js";

/** A list kept in step with the server by reading it again with `load()` (a subclass's)
 * whenever something may have changed. */
export class Reloading {
  constructor() {
    this.pending = null;
    this.again = false;
    this.stopped = false;
  }

  stop() {
    this.stopped = true;
  }

  /** Re-read the list. Calls made while a read is running coalesce into one more read. */
  refresh() {
    if (this.pending) {
      this.again = true;
      return this.pending;
    }
    this.pending = (async () => {
      do {
        this.again = false;
        await this.load();
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.pending = null;
    });
    return this.pending;
  }
}

/**
 * The body of a listing response whose `key` is an array, or null once `ui` was told why
 * not: a 401 calls `ui.onUnauthorized()`, any other failure is announced as "`failure`: why".
 */
export function listing(result, ui, key, failure) {
  if (result.status === 401) {
    ui.onUnauthorized();
    return null;
  }
  if (!result.ok || !result.body || !Array.isArray(result.body[key])) {
    ui.announce(errorText(result, failure));
    return null;
  }
  return result.body;
}
