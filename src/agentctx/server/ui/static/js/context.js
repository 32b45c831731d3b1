// #/sessions/<id>/context?query=…&budget=…&strategy=…&run=1: the window the engine
// would send for a query within a token budget, how the budget went to sections, and
// what was left out and why.

import { api } from "./api.js";
import { errorBox, h, json, replace } from "./dom.js";
import { textWithPlaceholders } from "./events.js";
import { hashFor } from "./router.js";
import { sessionFrame } from "./session.js";

const STRATEGIES = ["", "full", "compressed", "adaptive", "semantic"];
const COLORS = {
  system: "#64748b",
  pinned_instruction: "#0f766e",
  summary: "#7c3aed",
  summaries: "#7c3aed",
  memories: "#db2777",
  retrieved: "#d97706",
  active_task: "#0891b2",
  recent: "#2563eb",
};
const SPARE = ["#16a34a", "#9333ea", "#ea580c", "#0d9488", "#be123c", "#4f46e5"];

function colorOf(name, index) {
  return COLORS[name] || SPARE[index % SPARE.length];
}

export async function contextView(view, route, sessionId, router) {
  const frame = await sessionFrame(view, route, sessionId, "context");
  if (!frame) return;
  const { body } = frame;
  const params = route.query;
  const query = h("input", {
    id: "context-query", name: "query", type: "text", value: params.get("query") || "",
    placeholder: "What the next model call is about (optional)",
  });
  const budget = h("input", {
    id: "context-budget", name: "budget", type: "number", min: "1", max: "2000000",
    value: params.get("budget") || "4000", required: true,
  });
  const chosen = params.get("strategy") || "";
  const strategy = h("select", { id: "context-strategy", name: "strategy" },
    STRATEGIES.map((s) => h("option", { value: s, selected: s === chosen }, s || "default")));
  const form = h("form", { class: "toolbar context-form", id: "context-form" },
    h("label", null, "Query", query), h("label", null, "Budget (tokens)", budget),
    h("label", null, "Strategy", strategy), h("button", { type: "submit", class: "primary" }, "Build window"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    router.navigate(hashFor(["sessions", sessionId, "context"], {
      query: query.value, budget: budget.value, strategy: strategy.value, run: 1,
    }));
  });
  const result = h("div", { class: "context-result", id: "context-result" });
  replace(body, form, result);
  if (!params.has("run")) {
    result.append(h("p", { class: "muted" }, "Choose a query and a budget, then build the window."));
    return;
  }
  result.append(h("p", { class: "muted" }, "Building…"));
  let window;
  try {
    window = await api(`/v1/sessions/${encodeURIComponent(sessionId)}/context`, {
      method: "POST",
      body: {
        query: params.get("query") || null,
        budget: Number.parseInt(params.get("budget") || "4000", 10),
        strategy: params.get("strategy") || null,
      },
    });
  } catch (error) {
    if (route.current()) replace(result, errorBox(error));
    return;
  }
  if (!route.current()) return;
  replace(result, reportView({ ...window.report, sessionId }), messagesView(window.messages));
}

function reportView(report) {
  const used = report.sections.filter((s) => s.tokens > 0);
  const scale = Math.max(report.budget, report.tokens, 1);
  const bar = h(
    "div",
    { class: "stacked-bar", id: "section-bar", role: "img", "aria-label": "tokens per section" },
    used.map((s, i) => h("div", {
      class: "segment",
      title: `${s.name}: ${s.tokens} tokens`,
      dataset: { section: s.name, tokens: s.tokens },
      style: { width: `${(100 * s.tokens) / scale}%`, background: colorOf(s.name, i) },
    })),
  );
  const legend = h("table", { class: "list legend", id: "section-table" },
    h("thead", null, h("tr", null, h("th", null, "Section"), h("th", { class: "num" }, "Tokens"),
      h("th", { class: "num" }, "Allocated"), h("th", { class: "num" }, "Messages"),
      h("th", { class: "num" }, "Events"))),
    h("tbody", null, report.sections.map((s) => {
      const index = used.indexOf(s);
      const swatch = h("span", {
        class: "swatch",
        style: { background: index >= 0 ? colorOf(s.name, index) : "transparent" },
      });
      return h("tr", { dataset: { section: s.name } },
        h("td", null, swatch, s.name),
        h("td", { class: "num" }, s.tokens), h("td", { class: "num" }, s.allocated),
        h("td", { class: "num" }, s.messages), h("td", { class: "num" }, s.event_ids.length));
    })));
  const summary = h("p", { class: "window-summary", id: "window-summary" },
    h("strong", null, `${report.tokens} / ${report.budget} tokens`),
    ` · strategy ${report.strategy} · tokenizer ${report.tokenizer}`,
    ` · ${report.included_event_ids.length} events included`);
  // How much of the window repeats the previous one of the session from its start: what a
  // provider's prompt cache can reuse.
  const prefix = report.stable_prefix_tokens;
  const cacheLine = h("p", { class: "muted", id: "stable-prefix" },
    prefix === null || prefix === undefined
      ? "Prompt cache: no earlier window of this session to compare with."
      : `Prompt cache: the first ${prefix} tokens repeat the previous window `
        + `(${report.tokens ? Math.round((100 * prefix) / report.tokens) : 0}%).`);
  const images = report.images || {};
  const sent = images.inline?.length || 0;
  const held = images.placeholders?.length || 0;
  const imageLine = sent || held
    ? h("p", { class: "muted" }, `Images: ${sent} sent, ${held} as placeholders`)
    : null;
  return h("section", { class: "card" },
    h("h2", null, "Budget"), summary, cacheLine, bar, legend, imageLine, leftOut(report));
}

function leftOut(report) {
  const dropped = h("table", { class: "list", id: "dropped-table" },
    h("thead", null, h("tr", null, h("th", { class: "num" }, "Seq"), h("th", null, "Reason"),
      h("th", null, "Event"))),
    h("tbody", null, report.dropped.map((d) => h(
      "tr", { class: "dropped", dataset: { seq: d.seq, reason: d.reason } },
      h("td", { class: "num" }, h("a", { href: hashFor(["sessions", report.sessionId], { seq: d.seq }) }, d.seq)),
      h("td", null, h("span", { class: "badge" }, d.reason)),
      h("td", { class: "mono small" }, d.event_id)))));
  const truncated = h("table", { class: "list", id: "truncated-table" },
    h("thead", null, h("tr", null, h("th", { class: "num" }, "Seq"), h("th", null, "Tokens"),
      h("th", null, "Event"))),
    h("tbody", null, report.truncated.map((t) => h(
      "tr", { class: "truncated", dataset: { seq: t.seq } },
      h("td", { class: "num" }, t.seq), h("td", null, `${t.tokens_before} → ${t.tokens_after}`),
      h("td", { class: "mono small" }, t.event_id)))));
  return h("div", { class: "left-out", id: "left-out" },
    h("h2", null, "Left out"),
    h("h3", null, `Dropped (${report.dropped.length})`),
    report.dropped.length ? dropped : h("p", { class: "muted" }, "Nothing was dropped."),
    h("h3", null, `Truncated (${report.truncated.length})`),
    report.truncated.length ? truncated : h("p", { class: "muted" }, "Nothing was truncated."),
    report.not_considered
      ? h("p", { class: "muted", id: "not-considered" },
          `${report.not_considered} older events were not considered (never loaded).`)
      : null,
    h("h3", null, `Notes (${report.notes.length})`),
    report.notes.length
      ? h("ul", { class: "notes", id: "notes" }, report.notes.map((n) => h("li", null, n)))
      : h("p", { class: "muted" }, "No notes."));
}

function messagesView(messages) {
  return h("section", { class: "card" },
    h("h2", null, `Messages (${messages.length})`),
    h("div", { class: "messages", id: "context-messages" }, messages.map(messageView)));
}

/** One message of a context window as the model received it. */
export function messageView(message) {
  const content = [];
  const text = (value) => h("div", { class: "part text" }, textWithPlaceholders(value));
  if (typeof message.content === "string") content.push(text(message.content));
  else if (Array.isArray(message.content)) {
    for (const part of message.content) {
      if (part.type === "text") content.push(text(part.text));
      else if (part.type === "image_url" && /^data:image\//.test(part.image_url?.url || "")) {
        content.push(h("figure", { class: "part image" },
          h("img", { src: part.image_url.url, alt: "image sent to the model" }),
          h("figcaption", null, `image · detail ${part.image_url.detail || "auto"}`)));
      } else content.push(h("pre", { class: "part json" }, json(part)));
    }
  }
  for (const call of message.tool_calls || []) {
    content.push(h("div", { class: "part tool-call" },
      h("span", { class: "mono" }, `${call.function?.name ?? "tool"}(`),
      h("pre", { class: "json" }, call.function?.arguments || ""),
      h("span", { class: "mono" }, ")")));
  }
  return h("article", { class: `message role-${message.role}`, dataset: { role: message.role } },
    h("header", { class: "event-head" },
      h("span", { class: `badge badge-role-${message.role}` }, message.role),
      message.tool_call_id ? h("span", { class: "muted mono small" }, message.tool_call_id) : null),
    h("div", { class: "event-body" }, content));
}
