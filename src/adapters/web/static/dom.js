// Tiny DOM helpers. Text is always set through textContent / text nodes, never innerHTML,
// so question text written by an agent can never become markup.

/**
 * Create an element. `props` keys: "class", "text", "hidden", "on<event>" handlers,
 * "dataset" (object), boolean properties (checked, disabled), anything else → attribute.
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "checked" || key === "hidden") el[key] = Boolean(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** A short stable identifier usable in element ids, derived from arbitrary text. */
export function domId(prefix, text) {
  const safe = String(text).replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.codePointAt(0).toString(16)}`);
  return `${prefix}-${safe}`;
}

/** "just now", "5 minutes ago", "2 hours ago", "3 days ago". */
export function ago(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 45) return "just now";
  const units = [
    [86400, "day"],
    [3600, "hour"],
    [60, "minute"],
  ];
  for (const [size, name] of units) {
    if (s >= size) {
      const n = Math.round(s / size);
      return `${n} ${name}${n === 1 ? "" : "s"} ago`;
    }
  }
  return "1 minute ago";
}
