// The frame of every session view: the session's header (GET /v1/sessions/{id}) and
// tabs for its timeline, context window and topics. Another user's session is a 404.

import { api } from "./api.js";
import { add, errorBox, field, h, json, replace, when } from "./dom.js";
import { hashFor } from "./router.js";

const TABS = [
  ["timeline", "Timeline", []],
  ["context", "Context window", ["context"]],
  ["topics", "Topics & summaries", ["topics"]],
];

/**
 * Draw the session frame into ``view``; returns {session, body} or null when the
 * session could not be read (the error is shown).
 */
export async function sessionFrame(view, route, sessionId, active) {
  const title = h("h1", null, "Session ", h("span", { class: "mono" }, sessionId));
  replace(view, h("p", { class: "crumbs" }, h("a", { href: "#/sessions" }, "← Sessions")), title);
  let session;
  try {
    session = await api(`/v1/sessions/${encodeURIComponent(sessionId)}`);
  } catch (error) {
    if (route.current()) view.append(errorBox(error));
    return null;
  }
  if (!route.current()) return null;
  const tabs = h(
    "nav", { class: "tabs" },
    TABS.map(([name, label, suffix]) => h(
      "a",
      {
        href: hashFor(["sessions", sessionId, ...suffix]),
        class: name === active ? "tab active" : "tab",
        "aria-current": name === active ? "page" : null,
      },
      label,
    )),
  );
  const facts = h(
    "dl", { class: "facts" },
    field("Agent", session.agent_id),
    field("User", session.user_id),
    field("Last seq", String(session.last_seq)),
    field("Created", when(session.created_at)),
    field("Updated", when(session.updated_at)),
    field("Expires", session.expires_at ? when(session.expires_at) : "never"),
  );
  const state = Object.keys(session.state || {}).length
    ? h("details", { class: "state" },
        h("summary", null, `State (version ${session.state_version})`),
        h("pre", { class: "json" }, json(session.state)))
    : null;
  const body = h("section", { class: "session-body" });
  add(view, facts, state, tabs, body);
  return { session, body };
}
