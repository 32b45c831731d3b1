// #/sessions/<id>/topics: archived topics, thread summaries and folds, each with the
// seq range it covers; "Show events" lists exactly the events it stands for.

import { api, pages } from "./api.js";
import { errorBox, h, replace, when } from "./dom.js";
import { eventCard } from "./events.js";
import { sessionFrame } from "./session.js";

export async function topicsView(view, route, sessionId) {
  const frame = await sessionFrame(view, route, sessionId, "topics");
  if (!frame) return;
  const { body } = frame;
  const path = `/v1/sessions/${encodeURIComponent(sessionId)}`;
  let topics;
  let summaries;
  let folds;
  let images;
  try {
    [topics, summaries, folds, images] = await Promise.all(
      ["topics", "summaries", "folds", "images"].map((name) => api(`${path}/${name}`)),
    );
  } catch (error) {
    if (route.current()) body.append(errorBox(error));
    return;
  }
  if (!route.current()) return;
  const frames = new Map(images.map((f) => [`${f.event_id}:${f.part_index}`, f]));
  const covered = (item, ranges) => coverage(path, item, ranges, frames);

  replace(body,
    section("topics", `Topics (${topics.length})`, "No archived topics.", topics.map((t) => h(
      "article", { class: "card item topic", dataset: { first: t.first_seq, last: t.last_seq } },
      h("header", { class: "item-head" }, h("h3", null, t.title || "(untitled)"),
        h("span", { class: "badge" }, t.status), h("span", { class: "spacer" }),
        h("span", { class: "muted small" }, `seq ${t.first_seq}–${t.last_seq} · ${t.message_count} messages · ${t.token_count}/${t.source_tokens} tokens · ${t.method}`)),
      t.keywords?.length ? h("p", { class: "keywords" }, t.keywords.map((k) => h("span", { class: "chip" }, k))) : null,
      h("div", { class: "summary-text" }, t.summary),
      covered(t, [[t.first_seq, t.last_seq]]),
    ))),
    section("summaries", `Thread summaries (${summaries.length})`, "No thread summaries.", summaries.map((s) => h(
      "article", { class: "card item summary", dataset: { first: s.first_seq, last: s.last_seq } },
      h("header", { class: "item-head" }, h("h3", null, `${s.kind} summary v${s.version}`),
        h("span", { class: "spacer" }),
        h("span", { class: "muted small" }, `seq ${s.first_seq}–${s.last_seq} · ${s.source_event_count} events · ${s.token_count} tokens · ${s.method} · ${when(s.created_at)}`)),
      h("div", { class: "summary-text" }, s.text),
      covered(s, [[s.first_seq, s.last_seq]]),
    ))),
    section("folds", `Folds (${folds.length})`, "No folds.", folds.map((f) => h(
      "article", { class: "card item fold", dataset: { first: f.first_seq, last: f.last_seq } },
      h("header", { class: "item-head" }, h("h3", null, `Fold v${f.version} · level ${f.level}`),
        h("span", { class: "spacer" }),
        h("span", { class: "muted small" }, `seq ${f.first_seq}–${f.last_seq} · ${f.source_event_count} events · ${f.token_count} tokens · ${f.method}`)),
      h("div", { class: "summary-text" }, f.text),
      covered(f, f.seq_ranges?.length ? f.seq_ranges : [[f.first_seq, f.last_seq]]),
    ))),
  );
}

function section(id, title, empty, items) {
  return h("section", { class: "group", id: `${id}-section` }, h("h2", null, title),
    items.length ? items : h("p", { class: "muted" }, empty));
}

/** A "Show events" toggle listing the events in ``ranges`` (inclusive seq pairs). */
function coverage(path, item, ranges, frames) {
  const inRanges = (seq) => ranges.some(([a, b]) => seq >= a && seq <= b);
  const panel = h("div", { class: "covered-events", hidden: true });
  const button = h("button", { type: "button", class: "show-events" }, `Show events ${item.first_seq}–${item.last_seq}`);
  let loaded = false;
  button.addEventListener("click", async () => {
    if (loaded) {
      panel.hidden = !panel.hidden;
      button.textContent = `${panel.hidden ? "Show" : "Hide"} events ${item.first_seq}–${item.last_seq}`;
      return;
    }
    loaded = true;
    button.disabled = true;
    panel.hidden = false;
    replace(panel, h("p", { class: "muted" }, "Loading…"));
    const cards = [];
    try {
      await pages(`${path}/events`, { after_seq: Math.max(item.first_seq - 1, 0) || null, until_seq: item.last_seq, limit: 500 }, (page) => {
        for (const event of page.items) if (inRanges(event.seq)) cards.push(eventCard(event, frames));
      });
      replace(panel, h("p", { class: "muted count" }, `${cards.length} event${cards.length === 1 ? "" : "s"}`), cards);
    } catch (error) {
      loaded = false;
      replace(panel, errorBox(error));
    } finally {
      button.disabled = false;
      button.textContent = `Hide events ${item.first_seq}–${item.last_seq}`;
    }
  });
  return h("div", { class: "coverage" }, button, panel);
}
