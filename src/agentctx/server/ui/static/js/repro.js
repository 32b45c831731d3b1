// #/sessions/<id>/repro: the reproduction package of a session's failing turn
// (GET /v1/sessions/{id}/repro): the turn's events as stored (redacted), the context
// window recorded for it, and the configuration without secrets. The "Needs a human"
// list (GET /v1/hitl) is drawn here too, for the sessions view.

import { api } from "./api.js";
import { errorBox, field, h, json, replace, short, when } from "./dom.js";
import { messageView } from "./context.js";
import { eventCard } from "./events.js";
import { hashFor } from "./router.js";
import { sessionFrame } from "./session.js";

export async function reproView(view, route, sessionId) {
  const frame = await sessionFrame(view, route, sessionId, "repro");
  if (!frame) return;
  const { body } = frame;
  let repro;
  try {
    repro = await api(`/v1/sessions/${encodeURIComponent(sessionId)}/repro`, {
      query: { turn_id: route.query.get("turn") },
    });
  } catch (error) {
    if (route.current()) body.append(errorBox(error));
    return;
  }
  if (!route.current()) return;
  const causes = new Set(repro.cause_event_ids || []);
  const cards = repro.events.map((event) => {
    const card = eventCard(event);
    if (causes.has(event.event_id)) card.classList.add("cause");
    return card;
  });
  const window = repro.window;
  replace(body,
    h("section", { class: "card", id: "repro-summary" },
      h("h2", null, "Reproduction package"),
      h("dl", { class: "facts" },
        field("Turn", h("span", { class: "mono", id: "repro-turn", title: repro.turn_id }, short(repro.turn_id, 20))),
        field("Trigger", repro.trigger || "—"),
        field("Reason", repro.reason || "—"),
        field("Agent", repro.agent_id),
        field("Made", when(repro.created_at)))),
    h("section", { class: "group", id: "repro-events" },
      h("h2", null, `The turn's events (${repro.events.length})`),
      h("div", { class: "timeline" }, cards)),
    h("section", { class: "group", id: "repro-window" },
      h("h2", null, window ? `The window sent (${window.messages.length} messages)` : "The window sent"),
      window
        ? [
            h("p", { class: "muted" },
              `query “${window.query ?? ""}” · ${window.tokens} / ${window.budget} tokens · ${window.strategy}`),
            h("div", { class: "messages", id: "repro-messages" }, window.messages.map(messageView)),
          ]
        : h("p", { class: "muted" }, "No context window was recorded for this turn.")),
    h("section", { class: "group", id: "repro-config" },
      h("h2", null, "Configuration (secrets removed)"),
      h("pre", { class: "json", id: "repro-config-json" }, json(repro.config))));
}

/**
 * The "Needs a human" list for the top of the sessions view: an empty element when no
 * session waits (or the list cannot be read: the sessions below still show).
 */
export async function needsHumanList(route) {
  const box = h("section", { class: "needs-human", id: "needs-human" });
  let flags;
  try {
    flags = await api("/v1/hitl", { query: { limit: 1000 } });
  } catch {
    return box;
  }
  if (!route.current() || flags.length === 0) return box;
  box.append(
    h("h2", null, "Needs a human ", h("span", { class: "badge badge-error", id: "needs-human-count" }, flags.length)),
    h("ul", { class: "flags" }, flags.map((flag) => h(
      "li", { class: "hitl-flag", dataset: { sessionId: flag.session_id } },
      h("a", { href: hashFor(["sessions", flag.session_id]), class: "mono", title: flag.session_id }, flag.session_id),
      flag.trigger ? h("span", { class: "badge badge-error" }, flag.trigger) : null,
      h("span", { class: "hitl-reason" }, flag.reason || ""),
      h("span", { class: "spacer" }),
      h("span", { class: "muted small" }, when(flag.flagged_at)),
      h("a", { href: hashFor(["sessions", flag.session_id, "repro"]), class: "repro-link" }, "repro"),
    ))));
  return box;
}
