// #/sessions/<id>: the event log grouped by turns, page by page. A tool call's result
// is shown inside the call's card (matched by call_id), images as they are or, when
// windows compress them, as restorable placeholders.

import { api } from "./api.js";
import { errorBox, h, moreButton, replace, short, when } from "./dom.js";
import { eventCard, isError } from "./events.js";
import { pageSize } from "./sessions.js";
import { sessionFrame } from "./session.js";

export async function timelineView(view, route, sessionId) {
  const frame = await sessionFrame(view, route, sessionId, "timeline");
  if (!frame) return;
  const { session, body } = frame;
  const limit = pageSize(route.query.get("limit"), 200);
  // "?seq=N" (from a memory's source or a dropped event): load up to that event and
  // bring it into view.
  const target = Number.parseInt(route.query.get("seq") || "", 10);
  const path = `/v1/sessions/${encodeURIComponent(sessionId)}`;
  let turns;
  let images;
  try {
    [turns, images] = await Promise.all([api(`${path}/turns`), api(`${path}/images`)]);
  } catch (error) {
    if (route.current()) body.append(errorBox(error));
    return;
  }
  if (!route.current()) return;

  const frames = new Map(images.map((f) => [`${f.event_id}:${f.part_index}`, f]));
  const compressed = images.filter((f) => f.is_compressed).length;
  const turnIndex = new Map(turns.map((t, i) => [t.turn_id, { turn: t, number: i + 1 }]));
  const status = h("p", { class: "count muted", id: "timeline-count" });
  const list = h("div", { class: "timeline", id: "timeline" });
  const footer = h("div", { class: "footer" });
  replace(body, h("p", { class: "muted" },
    `${turns.length} turn${turns.length === 1 ? "" : "s"} · ${images.length} image reference${images.length === 1 ? "" : "s"}`,
    compressed ? ` (${compressed} shown to models as placeholders)` : ""),
  status, list, footer);

  const groups = new Map(); // turn id (or "") -> the element events of that turn go in
  const calls = new Map(); // call_id -> the results slot of its tool call card
  let loaded = 0;
  let errors = 0;

  const groupOf = (event) => {
    const id = event.turn_id || "";
    let group = groups.get(id);
    if (group) return group;
    const known = turnIndex.get(id);
    const turn = known?.turn;
    const failed = turn && turn.status !== "ok" && turn.status !== "open";
    const head = turn
      ? h("header", { class: "turn-head" },
          h("strong", null, `Turn ${known.number}`),
          h("span", { class: `badge status-${turn.status}` }, turn.status),
          h("span", { class: "muted" }, `${turn.event_count} event${turn.event_count === 1 ? "" : "s"}`),
          turn.first_seq != null ? h("span", { class: "muted" }, `seq ${turn.first_seq}–${turn.last_seq}`) : null,
          h("span", { class: "spacer" }),
          h("span", { class: "muted small mono", title: turn.turn_id }, short(turn.turn_id)),
          h("time", { class: "muted small", datetime: turn.started_at }, when(turn.started_at)))
      : h("header", { class: "turn-head" }, h("strong", null, "Outside turns"));
    group = h("div", { class: "turn-events" });
    list.append(h("section", {
      class: failed ? "turn is-error" : "turn",
      dataset: { turnId: id },
    }, head, group));
    groups.set(id, group);
    return group;
  };

  const place = (event) => {
    const card = eventCard(event, frames);
    if (isError(event)) errors += 1;
    if (event.type === "tool_result" && event.call_id && calls.has(event.call_id)) {
      card.classList.add("paired");
      calls.get(event.call_id).append(card);
      return;
    }
    if (event.type === "tool_call" && event.call_id) {
      const results = h("div", { class: "tool-results" });
      card.append(results);
      calls.set(event.call_id, results);
    }
    groupOf(event).append(card);
  };

  const load = async (cursor) => {
    let page;
    try {
      page = await api(`${path}/events`, { query: { limit, cursor } });
    } catch (error) {
      if (route.current()) replace(footer, errorBox(error));
      return;
    }
    if (!route.current()) return;
    page.items.forEach(place);
    loaded += page.items.length;
    status.textContent = `${loaded} event${loaded === 1 ? "" : "s"} shown (last seq ${session.last_seq})` +
      (errors ? ` · ${errors} error${errors === 1 ? "" : "s"}` : "");
    replace(footer, page.next_cursor
      ? moreButton("Load more events", () => load(page.next_cursor))
      : null);
    const last = page.items.length ? page.items[page.items.length - 1].seq : 0;
    if (target > last && page.next_cursor) await load(page.next_cursor);
  };
  await load(null);
  const card = Number.isFinite(target) && list.querySelector(`.event[data-seq="${target}"]`);
  if (card && route.current()) {
    card.classList.add("highlight");
    card.scrollIntoView({ block: "center" });
  }
}
