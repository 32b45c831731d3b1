// The inspector's entry point: sign-in, the header (navigation, user, sign-out) and
// the hash routes. Views live in js/.

import { auth, forgetImages, on } from "./js/api.js";
import { errorBox, h, replace } from "./js/dom.js";
import { contextView } from "./js/context.js";
import { memoriesView, memoryView } from "./js/memories.js";
import { reproView } from "./js/repro.js";
import { researchListView, researchView } from "./js/research.js";
import { Router, hashFor } from "./js/router.js";
import { sessionsView } from "./js/sessions.js";
import { signInView } from "./js/signin.js";
import { timelineView } from "./js/timeline.js";
import { topicsView } from "./js/topics.js";

const view = document.getElementById("view");
const header = document.getElementById("top");
let signInMessage = null;

// "#key=<token>" (optionally "&user=<id>" and "&session=<id>"): sign in from a link,
// then take the key out of the address bar and the history so it is not shared or
// bookmarked by accident, and open the link's session (else the sessions list).
function takeKeyFromFragment() {
  if (!location.hash.startsWith("#key=")) return;
  const params = new URLSearchParams(location.hash.slice(1));
  const key = params.get("key");
  const user = params.get("user") || "";
  if (key) {
    auth.signIn(key, user, Boolean(user));
    forgetImages();
    signInMessage = null;
  }
  const session = params.get("session");
  const target = hashFor(session ? ["sessions", session] : ["sessions"]);
  history.replaceState(null, "", `${location.pathname}${location.search}${target}`);
}

function drawHeader(route) {
  const section = route.path[0] || "sessions";
  const signedIn = Boolean(auth.key);
  const nav = signedIn
    ? h("nav", { class: "main-nav" },
        h("a", { href: "#/sessions", class: ["sessions", "research"].includes(section) ? "active" : null }, "Sessions"),
        h("a", { href: "#/memories", class: section === "memories" ? "active" : null }, "Memories"))
    : null;
  let userForm = null;
  if (signedIn && (auth.multi || auth.user)) {
    const input = h("input", { id: "user-id", name: "user_id", type: "text", value: auth.user, placeholder: "user id", autocomplete: "off" });
    userForm = h("form", { class: "user-form", id: "user-form" }, h("label", { for: "user-id" }, "User"), input,
      h("button", { type: "submit" }, "Switch"));
    userForm.addEventListener("submit", (event) => {
      event.preventDefault();
      auth.setUser(input.value.trim());
      forgetImages();
      // Ids of one user mean nothing for another: start over from their sessions.
      router.navigate(section === "memories" ? "#/memories" : "#/sessions");
    });
  }
  const signOut = signedIn
    ? h("button", { type: "button", class: "link", id: "sign-out", onclick: () => {
        auth.signOut();
        forgetImages();
        router.navigate("#/signin");
      } }, "Sign out")
    : null;
  replace(header, h("a", { href: "#/sessions", class: "brand" }, h("span", { class: "logo" }, "◆"), "agentctx inspector"),
    nav, h("span", { class: "spacer" }), userForm, signOut);
}

async function resolve(route) {
  drawHeader(route);
  const [section, id, sub] = route.path;
  if (!auth.key || section === "signin") {
    const message = signInMessage;
    signInMessage = null;
    document.title = "Sign in · agentctx";
    // A link to a view (a session, a memory) opens that view once signed in.
    const asked = section && section !== "signin" ? location.hash : hashFor(["sessions"]);
    signInView(view, { message, onSignedIn: () => router.navigate(asked) });
    return;
  }
  window.scrollTo(0, 0);
  if (section === undefined || section === "sessions") {
    if (id === undefined) {
      document.title = "Sessions · agentctx";
      return sessionsView(view, route, router);
    }
    document.title = `Session ${id} · agentctx`;
    if (sub === undefined) return timelineView(view, route, id);
    if (sub === "context") return contextView(view, route, id, router);
    if (sub === "topics") return topicsView(view, route, id);
    if (sub === "research") return researchListView(view, route, id);
    if (sub === "repro") return reproView(view, route, id);
  } else if (section === "research" && id !== undefined) {
    document.title = `Research ${id} · agentctx`;
    return researchView(view, route, id);
  } else if (section === "memories") {
    document.title = "Memories · agentctx";
    return id === undefined ? memoriesView(view, route, router) : memoryView(view, route, id);
  }
  replace(view, errorBox({ code: "not_found", message: `No view at ${location.hash}` }));
}

// A "#key=" link opened in a tab that already shows the inspector changes only the
// hash. This listener is added before the router's, so the router draws the view the
// link names, not "#key=…".
window.addEventListener("hashchange", takeKeyFromFragment);
const router = new Router(resolve);

on("unauthorized", (error) => {
  // The key was revoked or is wrong: back to the form, saying why. Views make
  // requests in parallel; only the first 401 signs out (a second would redraw the
  // form without its message).
  if (!auth.key) return;
  auth.signOut();
  forgetImages();
  signInMessage = error;
  router.navigate("#/signin");
});
on("needsUser", () => {
  if (!auth.multi) {
    auth.signIn(auth.key, auth.user, true);
    drawHeader({ path: location.hash.replace(/^#\/?/, "").split("/") });
  }
});

takeKeyFromFragment();
router.render();
