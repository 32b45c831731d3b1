// #/memories (?query= searches) and #/memories/<id>: the user's long-term memories,
// where each came from (sources) and every change (history).

import { api } from "./api.js";
import { errorBox, field, h, json, moreButton, replace, when } from "./dom.js";
import { hashFor } from "./router.js";
import { pageSize } from "./sessions.js";

export async function memoriesView(view, route, router) {
  const query = route.query.get("query") || "";
  const limit = pageSize(route.query.get("limit"), 100);
  const input = h("input", { id: "memory-query", type: "search", name: "query", value: query, placeholder: "Search memories" });
  const form = h("form", { class: "toolbar", id: "memory-search-form" }, input, h("button", { type: "submit" }, "Search"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    router.navigate(hashFor(["memories"], { query: input.value.trim() }));
  });
  const count = h("p", { class: "count muted", id: "memory-count" });
  const list = h("div", { class: "memory-list", id: "memory-list" });
  const footer = h("div", { class: "footer" });
  replace(view, h("h1", null, "Memories"), form, count, list, footer);

  if (query) {
    let hits;
    try {
      hits = await api("/v1/memories/search", { query: { query, limit: 100 } });
    } catch (error) {
      if (route.current()) replace(footer, errorBox(error));
      return;
    }
    if (!route.current()) return;
    hits.forEach((hit) => list.append(memoryRow(hit.memory, hit.score)));
    count.textContent = hits.length ? `${hits.length} match${hits.length === 1 ? "" : "es"} for “${query}”` : `No memory matches “${query}”.`;
    return;
  }
  let shown = 0;
  const load = async (offset) => {
    let page;
    try {
      page = await api("/v1/memories", { query: { limit, offset } });
    } catch (error) {
      if (route.current()) replace(footer, errorBox(error));
      return;
    }
    if (!route.current()) return;
    page.items.forEach((m) => list.append(memoryRow(m)));
    shown += page.items.length;
    count.textContent = shown ? `${shown} active memor${shown === 1 ? "y" : "ies"} shown` : "No memories yet.";
    replace(footer, page.next_offset != null ? moreButton("Load more memories", () => load(page.next_offset)) : null);
  };
  await load(0);
}

function memoryRow(memory, score) {
  return h("a", { class: "card memory-row", href: hashFor(["memories", memory.memory_id]), dataset: { memoryId: memory.memory_id } },
    h("header", { class: "item-head" },
      h("span", { class: `badge kind-${memory.kind}` }, memory.kind),
      memory.subject ? h("strong", null, memory.subject) : null,
      memory.tainted ? h("span", { class: "badge badge-failed" }, "tainted") : null,
      h("span", { class: "spacer" }),
      score != null ? h("span", { class: "muted small" }, `score ${score.toFixed(3)}`) : null,
      h("span", { class: "muted small" }, `confidence ${memory.confidence.toFixed(2)} · v${memory.version} · ${when(memory.updated_at)}`)),
    h("div", { class: "memory-content" }, memory.content));
}

export async function memoryView(view, route, memoryId) {
  replace(view, h("p", { class: "crumbs" }, h("a", { href: "#/memories" }, "← Memories")),
    h("h1", null, "Memory ", h("span", { class: "mono" }, memoryId)));
  let memory;
  let history;
  try {
    const path = `/v1/memories/${encodeURIComponent(memoryId)}`;
    [memory, history] = await Promise.all([api(path), api(`${path}/history`)]);
  } catch (error) {
    if (route.current()) view.append(errorBox(error));
    return;
  }
  if (!route.current()) return;
  const sources = memory.sources.length
    ? h("table", { class: "list", id: "memory-sources" },
        h("thead", null, h("tr", null, h("th", null, "Session"), h("th", { class: "num" }, "Seq"), h("th", null, "Event"), h("th", null, "Extractor"), h("th", null, "Model"))),
        h("tbody", null, memory.sources.map((s) => h("tr", { class: "source" },
          h("td", null, h("a", { href: hashFor(["sessions", s.session_id]), class: "mono" }, s.session_id)),
          h("td", { class: "num" }, s.seq == null ? "" : h("a", {
            href: hashFor(["sessions", s.session_id], { seq: s.seq }), class: "seq-link",
          }, s.seq)), h("td", { class: "mono small" }, s.event_id),
          h("td", null, s.extractor_version), h("td", null, s.model || "")))))
    : h("p", { class: "muted", id: "memory-sources" }, "No recorded sources (added directly).");
  const changes = h("ol", { class: "history", id: "memory-history" }, history.map((c) => h("li", { class: "change", dataset: { action: c.action } },
    h("header", { class: "item-head" }, h("strong", null, `v${c.version} ${c.action}`), h("span", { class: "muted" }, c.reason),
      h("span", { class: "spacer" }), h("time", { class: "muted small", datetime: c.ts }, when(c.ts))),
    c.new_value?.content !== undefined && c.new_value?.content !== c.old_value?.content
      ? h("div", { class: "memory-content" }, c.new_value.content) : null,
    changed(c.old_value, c.new_value),
    h("details", null, h("summary", null, "values"), h("pre", { class: "json" }, json({ old: c.old_value, new: c.new_value, source: c.source }))))));
  view.append(
    h("section", { class: "card" },
      h("div", { class: "memory-content big", id: "memory-content" }, memory.content),
      h("dl", { class: "facts" },
        field("Kind", memory.kind), field("Status", memory.status), field("Subject", memory.subject || "—"),
        field("Confidence", memory.confidence.toFixed(2)), field("Support", String(memory.support_count)),
        field("Version", String(memory.version)), field("Agent", memory.agent_id || "any"),
        field("Session", memory.session_id ? h("a", { href: hashFor(["sessions", memory.session_id]), class: "mono" }, memory.session_id) : "any"),
        field("Extractor", memory.extractor_version), field("Created", when(memory.created_at)),
        field("Updated", when(memory.updated_at)), field("Expires", memory.expires_at ? when(memory.expires_at) : "never")),
      memory.keywords.length ? h("p", { class: "keywords" }, memory.keywords.map((k) => h("span", { class: "chip" }, k))) : null,
      Object.keys(memory.data || {}).length ? h("pre", { class: "json" }, json(memory.data)) : null),
    h("section", { class: "card" }, h("h2", null, `Sources (${memory.sources.length})`), sources),
    h("section", { class: "card" }, h("h2", null, `History (${history.length})`), changes),
  );
}

/** "confidence: 0.9 → 0.95" lines for the fields a change altered (content aside). */
function changed(before, after) {
  if (!before || !after) return null;
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((name) => name !== "content" && JSON.stringify(before[name]) !== JSON.stringify(after[name]));
  if (!names.length) return null;
  return h("ul", { class: "diff" }, names.map((name) => h("li", { dataset: { field: name } },
    h("span", { class: "mono" }, name), ": ", JSON.stringify(before[name] ?? null), " → ",
    JSON.stringify(after[name] ?? null))));
}
