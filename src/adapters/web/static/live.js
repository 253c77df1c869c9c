// Live updates from GET /api/v1/events. The browser's EventSource reconnects by itself after
// a dropped connection; when it gives up (a non-200 answer, e.g. after a restart or when the
// session expired) we open a new one with a growing delay. Every (re)connection and every
// relevant event asks the inbox to re-read the listing, so nothing missed while offline stays
// missed.

const KINDS = [
  "bundle.created",
  "bundle.resolved",
  "bundle.detached",
  "bundle.expired",
  "bundle.restored",
  "bundle.cancelled",
  "bundle.superseded",
  "session.updated",
  "turn.started",
];

/**
 * @param url the event stream
 * @param handlers {onChange(reason), onState("live" | "reconnecting")}
 * @returns {stop()}
 */
export function connectLive(url, handlers) {
  let source = null;
  let timer = null;
  let delay = 1000;
  let stopped = false;

  const open = () => {
    timer = null;
    if (stopped) return;
    source = new EventSource(url, { withCredentials: true });
    source.addEventListener("open", () => {
      delay = 1000;
      handlers.onState("live");
      handlers.onChange("connected");
    });
    source.addEventListener("message", () => handlers.onChange("message"));
    for (const kind of KINDS) source.addEventListener(kind, () => handlers.onChange(kind));
    source.addEventListener("error", () => {
      handlers.onState("reconnecting");
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        // The refresh finds out whether the session is still valid (401 → sign in again).
        handlers.onChange("closed");
        timer = setTimeout(open, delay);
        delay = Math.min(delay * 2, 30_000);
      }
    });
  };

  open();
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (source) source.close();
    },
  };
}
