// The sign-in form: an API key (and, for a key acting for several users, a user id).
// The key is checked against GET /v1/sessions before it is kept.

import { api, auth, needsUser } from "./api.js";
import { errorBox, h, replace } from "./dom.js";

export function signInView(view, { message, onSignedIn }) {
  const status = h("div", { class: "signin-status", "aria-live": "polite" });
  if (message) replace(status, errorBox(message));
  const keyInput = h("input", {
    id: "signin-key", name: "key", type: "password", autocomplete: "off",
    required: true, placeholder: "API key or bearer token",
  });
  const userInput = h("input", {
    id: "signin-user", name: "user", type: "text", autocomplete: "off",
    placeholder: "only for keys acting for several users", value: auth.user,
  });
  const submit = h("button", { type: "submit", class: "primary" }, "Sign in");
  const form = h(
    "form",
    { class: "signin card", id: "signin-form" },
    h("h1", null, "Sign in"),
    h("p", { class: "muted" }, "The inspector reads the API with your key and shows exactly what it may see."),
    h("label", { for: "signin-key" }, "API key"),
    keyInput,
    h("label", { for: "signin-user" }, "User id (optional)"),
    userInput,
    submit,
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = keyInput.value.trim();
    const user = userInput.value.trim();
    if (!key) return;
    submit.disabled = true;
    replace(status, h("span", { class: "muted" }, "Checking the key…"));
    try {
      const multi = await check(key, user);
      auth.signIn(key, user, multi);
      onSignedIn();
    } catch (error) {
      replace(status, errorBox(error));
      if (needsUser(error)) {
        status.append(h("p", { class: "hint" }, "This key acts for several users: enter a user id."));
        userInput.focus();
      }
    } finally {
      submit.disabled = false;
    }
  });
  replace(view, h("div", { class: "signin-wrap" }, form));
  keyInput.focus();
}

/** Check a key; returns whether it needs a user id (several users, or admin). */
async function check(key, user) {
  if (user) {
    // Whether the key reaches this user at all; it may also reach others.
    await api("/v1/sessions", { key, user, query: { limit: 1 } });
    try {
      await api("/v1/sessions", { key, user: "", query: { limit: 1 } });
      return false;
    } catch (error) {
      if (needsUser(error)) return true;
      throw error;
    }
  }
  await api("/v1/sessions", { key, user: "", query: { limit: 1 } });
  return false;
}
