// The frame of every session view: the session's header (GET /v1/sessions/{id}) and
// tabs for its timeline, context window, topics and web research. Another user's
// session is a 404. A session waiting for a human (GET /v1/hitl) gets a banner and a
// tab with its reproduction package; a search session links to its report.

import { api } from "./api.js";
import { add, errorBox, field, h, json, replace, when } from "./dom.js";
import { hashFor } from "./router.js";

const TABS = [
  ["timeline", "Timeline", []],
  ["context", "Context window", ["context"]],
  ["topics", "Topics & summaries", ["topics"]],
  ["research", "Research", ["research"]],
];
const REPRO_TAB = ["repro", "Needs a human · repro", ["repro"]];

/**
 * Draw the session frame into ``view``; returns {session, body} or null when the
 * session could not be read (the error is shown).
 */
export async function sessionFrame(view, route, sessionId, active) {
  const title = h("h1", null, "Session ", h("span", { class: "mono" }, sessionId));
  replace(view, h("p", { class: "crumbs" }, h("a", { href: "#/sessions" }, "← Sessions")), title);
  let session;
  // The flag list is read-only (GET /v1/sessions/{id}/hitl would evaluate the
  // triggers); when it cannot be read the frame is drawn without the banner.
  const flags = api("/v1/hitl", { query: { limit: 1000 } }).catch(() => []);
  try {
    session = await api(`/v1/sessions/${encodeURIComponent(sessionId)}`);
  } catch (error) {
    if (route.current()) view.append(errorBox(error));
    return null;
  }
  const flag = (await flags).find((f) => f.session_id === sessionId) || null;
  if (!route.current()) return null;
  const tabs = h(
    "nav", { class: "tabs" },
    [...TABS, ...(flag || active === "repro" ? [REPRO_TAB] : [])].map(([name, label, suffix]) => h(
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
  add(view, flag ? hitlBanner(sessionId, flag) : null, searchNote(session), facts, state, tabs, body);
  return { session, body, flag };
}

function hitlBanner(sessionId, flag) {
  return h("div", { class: "hitl-banner", id: "hitl-banner", role: "status" },
    h("strong", null, "Needs a human"),
    flag.trigger ? h("span", { class: "badge badge-error" }, flag.trigger) : null,
    h("span", { class: "hitl-reason" }, flag.reason || ""),
    h("span", { class: "spacer" }),
    flag.flagged_at ? h("span", { class: "muted small" }, `flagged ${when(flag.flagged_at)}`) : null,
    h("a", { href: hashFor(["sessions", sessionId, "repro"]), id: "repro-link" }, "Reproduction package"));
}

// A search session (started by a research) points back to its report and parent.
function searchNote(session) {
  const meta = session.meta || {};
  if (!meta.parent_session_id || meta.question === undefined) return null;
  return h("p", { class: "search-note", id: "search-note" },
    "Search session for “", h("span", { class: "question" }, String(meta.question)), "” · ",
    h("a", { href: hashFor(["research", session.session_id]), id: "report-link" }, "Research report"),
    " · ",
    h("a", { href: hashFor(["sessions", meta.parent_session_id]), class: "mono" }, "parent session"));
}
