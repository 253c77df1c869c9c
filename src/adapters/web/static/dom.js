// Tiny DOM helpers. Text is always set through textContent / text nodes, never innerHTML,
// so question text written by an agent can never become markup. And every piece of text
// becomes its own bidirectional isolate (<bdi>): a right-to-left override (U+202E) or any
// other direction control inside one label stays inside it and cannot reorder the labels,
// separators or words around it.

// Elements whose content must stay plain text (a <bdi> inside would not be rendered).
const PLAIN_TEXT_TAGS = new Set(["bdi", "option", "textarea", "title", "style", "script"]);

/** `text` as a bidirectional isolate: a <bdi> element holding it as plain text. */
export function isolated(text) {
  const el = document.createElement("bdi");
  el.textContent = String(text);
  return el;
}

/** Replace an element's content with `parts`, each string an isolate of its own. */
export function setText(el, ...parts) {
  el.replaceChildren(...parts.flat().map((part) => (part instanceof Node ? part : isolated(part))));
}

/** `parts` with `separator` between them, for h(): each part stays an isolate of its own. */
export function joined(parts, separator) {
  return parts.flatMap((part, i) => (i === 0 ? [part] : [separator, part]));
}

/**
 * Create an element. `props` keys: "class", "text", "hidden", "on<event>" handlers,
 * "dataset" (object), boolean properties (checked, disabled), anything else → attribute.
 * Text ("text" and string children) is isolated (see above).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  const plain = PLAIN_TEXT_TAGS.has(tag);
  const text = (value) => (plain ? document.createTextNode(String(value)) : isolated(value));
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.append(text(value));
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "checked" || key === "hidden") el[key] = Boolean(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : text(child));
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
