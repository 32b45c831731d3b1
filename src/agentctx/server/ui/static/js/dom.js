// DOM helpers. Every piece of data reaches the page as a text node or an attribute
// value, never as markup: nothing here parses HTML.

/** Create an element: h("a", {href: "#/x", class: "link"}, "text", child, [more]). */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") el.className = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (name === "style") Object.assign(el.style, value);
    else if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "value" || name === "checked" || name === "disabled") el[name] = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  add(el, children);
  return el;
}

/** Append children (nodes, strings, numbers, nested arrays; null is skipped). */
export function add(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Replace all children of ``el``. */
export function replace(el, ...children) {
  el.replaceChildren();
  return add(el, ...children);
}

/** An error box for an API error (or any Error). */
export function errorBox(error) {
  const code = error && error.code ? error.code : "error";
  const message = error && error.message ? error.message : String(error);
  return h(
    "div",
    { class: "error-box", role: "alert", dataset: { code } },
    h("strong", { class: "error-code" }, code),
    h("span", { class: "error-message" }, message),
  );
}

/** A short local date-time for an ISO timestamp. */
export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return date.toLocaleString(undefined, {
    year: "numeric", month: "short", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit",
  });
}

/** Pretty JSON for display in a <pre>. */
export function json(value) {
  return JSON.stringify(value, null, 2);
}

/** "a…z" shortening of long ids for tight columns (the full id stays in the title). */
export function short(id, keep = 13) {
  const text = String(id ?? "");
  return text.length > keep + 3 ? text.slice(0, keep) + "…" : text;
}

/** A "Load more" button that calls ``load`` and disables itself while it runs. */
export function moreButton(label, load) {
  const button = h("button", { type: "button", class: "more" }, label);
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await load();
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

/** A labelled value for definition lists. */
export function field(label, ...value) {
  return h("div", { class: "fact" }, h("dt", null, label), h("dd", null, ...value));
}
