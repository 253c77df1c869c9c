// W4/W4a: the free-text limit the server enforces (N8b), counted the way the server counts.

import { h } from "./dom.js";

/** N8b: at most 2000 code points in `custom_text` and in a skip reason. */
export const TEXT_LIMIT = 2000;

/**
 * Code points, not UTF-16 units: an astral character (emoji, CJK Extension B) counts once,
 * as the server counts it. `value.length` would count it twice (W4a).
 */
export function codePointLength(value) {
  return [...value].length;
}

/**
 * Wire a textarea to a visible counter and an over-limit message. Never truncates (W4a):
 * the text stays as typed and the caller blocks submission while `isOver()` is true.
 */
export function limitedText(textarea, counter, message, onChange) {
  const state = { over: false };
  const update = () => {
    const used = codePointLength(textarea.value);
    state.over = used > TEXT_LIMIT;
    counter.textContent = `${used} / ${TEXT_LIMIT}`;
    counter.classList.toggle("over", state.over);
    if (state.over) {
      const excess = used - TEXT_LIMIT;
      message.textContent =
        `Too long: ${used} characters, the limit is ${TEXT_LIMIT}. ` +
        `Remove ${excess} character${excess === 1 ? "" : "s"} to submit.`;
      textarea.setAttribute("aria-invalid", "true");
    } else if (message.dataset.source !== "server") {
      message.textContent = "";
      textarea.removeAttribute("aria-invalid");
    }
    onChange();
  };
  textarea.addEventListener("input", () => {
    // A server message about this field is stale once the person edits it.
    if (message.dataset.source === "server") {
      delete message.dataset.source;
      message.textContent = "";
      textarea.removeAttribute("aria-invalid");
    }
    update();
  });
  update();
  return {
    isOver: () => state.over,
    refresh: update,
  };
}

/**
 * A limited textarea with its counter and message: the textarea gets `textareaId`, the
 * counter and message `${baseId}-count` and `${baseId}-msg` (which describe the textarea),
 * wired by `limitedText`. `meta` holds the message and counter, to show below the textarea.
 */
export function limitedTextField(textareaId, baseId, onChange) {
  const textarea = h("textarea", {
    id: textareaId,
    rows: "2",
    "aria-describedby": `${baseId}-count ${baseId}-msg`,
  });
  const counter = h("span", { class: "counter", id: `${baseId}-count` });
  const message = h("p", { class: "field-error", id: `${baseId}-msg`, "aria-live": "polite" });
  const limit = limitedText(textarea, counter, message, onChange);
  const meta = h("div", { class: "field-meta" }, message, counter);
  return { textarea, message, limit, meta };
}
