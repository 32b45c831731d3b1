// Web research: #/sessions/<id>/research lists the searches a session started
// (GET /v1/sessions/{id}/research, each with its report's confidence), and
// #/research/<sub_session_id> shows one report (GET /v1/research/{id}): the answer,
// its confidence, the sources with their evidence and the pages read (restored from
// GET /v1/sessions/{sub}/offloaded/{page_id}), and what each iteration did.

import { api } from "./api.js";
import { errorBox, field, h, replace, short, when } from "./dom.js";
import { hashFor } from "./router.js";
import { sessionFrame } from "./session.js";

const STOPPED = {
  confident: "confidence reached the threshold",
  max_iterations: "the iteration limit was reached",
  exhausted: "no new query or result was left",
};

export async function researchListView(view, route, sessionId) {
  const frame = await sessionFrame(view, route, sessionId, "research");
  if (!frame) return;
  const { body } = frame;
  let searches;
  try {
    searches = await api(`/v1/sessions/${encodeURIComponent(sessionId)}/research`);
  } catch (error) {
    if (route.current()) body.append(errorBox(error));
    return;
  }
  if (!route.current()) return;
  if (searches.length === 0) {
    replace(body, h("p", { class: "muted", id: "research-count" }, "This session started no web research."));
    return;
  }
  const rows = searches.map((s) => {
    const confidence = h("td", { class: "num confidence" }, "…");
    const stopped = h("td", { class: "stopped" }, "");
    // Each report is read on its own so one unreadable report does not hide the rest.
    api(`/v1/research/${encodeURIComponent(s.session_id)}`).then(
      (report) => {
        replace(confidence, meter(report.confidence, true));
        stopped.textContent = report.stopped;
      },
      (error) => replace(confidence, errorBox(error)),
    );
    return h(
      "tr", { class: "research-row", dataset: { subSessionId: s.session_id } },
      h("td", null, h("a", { href: hashFor(["research", s.session_id]), class: "question" },
        String(s.meta?.question ?? s.session_id))),
      confidence,
      stopped,
      h("td", null, s.meta?.provider || ""),
      h("td", null, when(s.created_at)),
      h("td", null, h("a", { href: hashFor(["sessions", s.session_id]), class: "mono small", title: s.session_id },
        short(s.session_id))),
    );
  });
  replace(body,
    h("p", { class: "count muted", id: "research-count" },
      `${searches.length} research${searches.length === 1 ? "" : "es"}`),
    h("table", { class: "list", id: "research-table" },
      h("thead", null, h("tr", null,
        h("th", null, "Question"), h("th", { class: "num" }, "Confidence"), h("th", null, "Stopped"),
        h("th", null, "Provider"), h("th", null, "Started"), h("th", null, "Search session"))),
      h("tbody", null, rows)));
}

export async function researchView(view, route, subSessionId) {
  const path = encodeURIComponent(subSessionId);
  replace(view, h("p", { class: "crumbs" }, h("a", { href: "#/sessions" }, "← Sessions")),
    h("h1", null, "Research ", h("span", { class: "mono" }, subSessionId)));
  let report;
  let session;
  try {
    [report, session] = await Promise.all([
      api(`/v1/research/${path}`),
      api(`/v1/sessions/${path}`),
    ]);
  } catch (error) {
    if (route.current()) view.append(errorBox(error));
    return;
  }
  if (!route.current()) return;
  const parent = session.meta?.parent_session_id;
  replace(view,
    h("p", { class: "crumbs" },
      parent
        ? h("a", { href: hashFor(["sessions", parent, "research"]), id: "parent-link" }, "← Session's research")
        : h("a", { href: "#/sessions" }, "← Sessions")),
    h("h1", { id: "research-question" }, report.question),
    h("section", { class: "card", id: "research-summary" },
      h("h2", null, "Answer"),
      h("div", { class: "answer", id: "research-answer" }, report.answer || "(no answer found)"),
      h("div", { class: "confidence-row" }, h("span", { class: "muted" }, "Confidence"),
        meter(report.confidence, false)),
      h("dl", { class: "facts" },
        field("Method", h("span", { id: "research-method" }, report.method)),
        field("Stopped", h("span", { id: "research-stopped", dataset: { stopped: report.stopped } },
          report.stopped), h("div", { class: "muted small" }, STOPPED[report.stopped] || "")),
        field("Iterations", String(report.iterations)),
        field("Provider", report.provider || "—"),
        field("Model failures", String(report.llm_failures ?? 0)),
        field("Errors", errorCodes(report.errors)),
        field("Search session", h("a", { href: hashFor(["sessions", subSessionId]), id: "sub-session-link", class: "mono" },
          "timeline")),
      )),
    sourcesView(report, subSessionId),
    iterationsView(report.history || []));
}

/** A confidence meter (0..1) with its percentage; ``small`` for table cells. */
function meter(value, small) {
  const percent = Math.round((Number(value) || 0) * 100);
  const level = percent >= 80 ? "high" : percent >= 50 ? "medium" : "low";
  return h("span", { class: `confidence ${level}${small ? " small" : ""}`, dataset: { confidence: value } },
    h("meter", { min: 0, max: 1, low: 0.5, high: 0.8, optimum: 1, value: Number(value) || 0,
      id: small ? null : "confidence-meter", "aria-label": "confidence" }),
    h("span", { class: "confidence-text" }, `${percent}%`));
}

function errorCodes(errors) {
  const entries = Object.entries(errors || {});
  if (entries.length === 0) return "none";
  return entries.map(([code, count]) => h("span", { class: "chip" }, `${code} ×${count}`));
}

function sourcesView(report, subSessionId) {
  const items = report.sources.map((source) => {
    const pageBox = h("div", { class: "page-slot" });
    const button = source.page_id
      ? h("button", { type: "button", class: "show-page", dataset: { pageId: source.page_id } }, "Show page")
      : h("span", { class: "muted small" }, "not read");
    if (source.page_id) {
      button.addEventListener("click", () => togglePage(button, pageBox, subSessionId, source.page_id));
    }
    return h("li", { class: "source card", dataset: { n: source.n } },
      h("div", { class: "item-head" },
        h("span", { class: "source-n" }, `[${source.n}]`),
        h("strong", { class: "source-title" }, source.title || source.url),
        source.published_date ? h("span", { class: "muted small published" }, source.published_date) : null,
        h("span", { class: "spacer" }),
        button),
      link(source.url),
      source.evidence.length
        ? h("div", { class: "evidence" }, source.evidence.map((quote) => h("blockquote", null, quote)))
        : null,
      pageBox);
  });
  return h("section", { class: "group", id: "research-sources" },
    h("h2", null, `Sources (${report.sources.length})`),
    items.length ? h("ol", { class: "sources", id: "sources" }, items) : h("p", { class: "muted" }, "No sources."));
}

// A source's address, shown in full. Only web addresses become links: a
// "javascript:" or "data:" URL from a search hit stays inert text.
function link(url) {
  let safe = false;
  try {
    safe = ["http:", "https:"].includes(new URL(url).protocol);
  } catch {
    safe = false;
  }
  return safe
    ? h("a", { href: url, class: "source-url mono small", rel: "noopener noreferrer", target: "_blank" }, url)
    : h("span", { class: "source-url mono small" }, url);
}

async function togglePage(button, box, subSessionId, pageId) {
  if (box.childElementCount > 0) {
    box.replaceChildren();
    button.textContent = "Show page";
    return;
  }
  button.disabled = true;
  try {
    const text = await api(
      `/v1/sessions/${encodeURIComponent(subSessionId)}/offloaded/${encodeURIComponent(pageId)}`,
      { as: "text" },
    );
    // textContent, never markup: a page is whatever the web served.
    replace(box, h("pre", { class: "page-text", dataset: { pageId } }, text));
    button.textContent = "Hide page";
  } catch (error) {
    replace(box, errorBox(error));
  } finally {
    button.disabled = false;
  }
}

function iterationsView(history) {
  const rows = history.map((it) => h(
    "tr", { class: "iteration", dataset: { iteration: it.iteration } },
    h("td", { class: "num" }, it.iteration),
    h("td", null, it.queries.map((q) => h("div", { class: "query" }, q))),
    h("td", { class: "num results" }, it.results),
    h("td", { class: "pages", dataset: { count: it.pages.length } },
      it.pages.length ? `${it.pages.length}: ` : "0",
      it.pages.map((p) => h("span", { class: "mono small page-id" }, `${p} `))),
    h("td", { class: "errors" }, it.errors.length ? it.errors.map((e) => h("span", { class: "chip" }, e)) : "—"),
    h("td", { class: "num" }, meter(it.confidence, true)),
    h("td", null, it.method),
  ));
  return h("section", { class: "group", id: "research-iterations" },
    h("h2", null, `Iterations (${history.length})`),
    h("table", { class: "list", id: "iterations-table" },
      h("thead", null, h("tr", null,
        h("th", { class: "num" }, "#"), h("th", null, "Queries"), h("th", { class: "num" }, "Results"),
        h("th", null, "Pages read"), h("th", null, "Errors"), h("th", { class: "num" }, "Confidence"),
        h("th", null, "Method"))),
      h("tbody", null, rows)));
}
