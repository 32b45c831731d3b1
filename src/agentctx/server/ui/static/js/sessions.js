// #/sessions: the sessions waiting for a human, then the user's live sessions,
// searched by part of an id, page by page.

import { api } from "./api.js";
import { errorBox, h, moreButton, replace, when } from "./dom.js";
import { needsHumanList } from "./repro.js";
import { hashFor } from "./router.js";

export async function sessionsView(view, route, router) {
  const search = route.query.get("search") || "";
  const limit = pageSize(route.query.get("limit"), 50);
  const input = h("input", {
    id: "session-search", type: "search", name: "search", value: search,
    placeholder: "Part of a session id",
  });
  const form = h(
    "form", { class: "toolbar", id: "session-search-form" },
    input, h("button", { type: "submit" }, "Search"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    router.navigate(hashFor(["sessions"], { search: input.value.trim(), limit: route.query.get("limit") }));
  });
  const rows = h("tbody");
  const count = h("p", { class: "count muted", id: "session-count" });
  const footer = h("div", { class: "footer" });
  const table = h(
    "table", { class: "list", id: "sessions-table" },
    h("thead", null, h("tr", null,
      h("th", null, "Session"), h("th", null, "Agent"), h("th", { class: "num" }, "Events"),
      h("th", null, "Created"), h("th", null, "Updated"))),
    rows,
  );
  const flagged = h("div", { id: "needs-human-slot" });
  replace(view, flagged, h("h1", null, "Sessions"), form, count, table, footer);
  // Filled when it arrives, so the flag list never holds the sessions back.
  const flags = needsHumanList(route).then((box) => {
    if (route.current()) replace(flagged, box);
  });

  let shown = 0;
  const load = async (cursor) => {
    let page;
    try {
      page = await api("/v1/sessions", { query: { search, limit, cursor } });
    } catch (error) {
      if (route.current()) replace(footer, errorBox(error));
      return;
    }
    if (!route.current()) return;
    for (const s of page.items) {
      const href = hashFor(["sessions", s.session_id]);
      rows.append(h(
        "tr", { class: "session-row", dataset: { sessionId: s.session_id } },
        h("td", null, h("a", { href, class: "mono", title: s.session_id }, s.session_id)),
        h("td", null, s.agent_id),
        h("td", { class: "num" }, s.last_seq),
        h("td", null, when(s.created_at)),
        h("td", null, when(s.updated_at)),
      ));
    }
    shown += page.items.length;
    count.textContent = shown === 0
      ? (search ? `No session matches “${search}”.` : "No sessions yet.")
      : `${shown} session${shown === 1 ? "" : "s"} shown`;
    replace(footer, page.next_cursor
      ? moreButton("Load more sessions", () => load(page.next_cursor))
      : null);
  };
  await Promise.all([load(null), flags]);
}

/** A page size from the hash (``?limit=``), within the API's 1..1000. */
export function pageSize(value, fallback) {
  const n = Number.parseInt(value ?? "", 10);
  return Number.isFinite(n) && n >= 1 ? Math.min(n, 1000) : fallback;
}
