// The REST client: every call carries the signed-in key as a bearer token and, when
// one is chosen, the user the key acts for. Errors become ApiError with the API's code.

const KEY = "agentctx.inspector.key";
const USER = "agentctx.inspector.user";
const MULTI = "agentctx.inspector.multi";

// static/js/api.js -> the app's root, so the inspector works under a path prefix too.
const ROOT = new URL("../../../", import.meta.url);

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/** The signed-in key and user, kept in sessionStorage (gone when the tab closes). */
export const auth = {
  get key() {
    return sessionStorage.getItem(KEY);
  },
  get user() {
    return sessionStorage.getItem(USER) || "";
  },
  /** Whether the key needs a user id (it acts for several users, or is an admin key). */
  get multi() {
    return sessionStorage.getItem(MULTI) === "1";
  },
  signIn(key, user, multi) {
    sessionStorage.setItem(KEY, key);
    this.setUser(user);
    sessionStorage.setItem(MULTI, multi ? "1" : "0");
  },
  setUser(user) {
    if (user) sessionStorage.setItem(USER, user);
    else sessionStorage.removeItem(USER);
  },
  signOut() {
    for (const name of [KEY, USER, MULTI]) sessionStorage.removeItem(name);
  },
};

const listeners = { unauthorized: [], needsUser: [] };

/** Subscribe to "unauthorized" (a 401) or "needsUser" (the key acts for several users). */
export function on(event, callback) {
  listeners[event].push(callback);
}

function emit(event, detail) {
  for (const callback of listeners[event]) callback(detail);
}

/** The URL of an API path with its query (null, undefined and "" values are left out). */
export function apiUrl(path, query = {}, user = auth.user) {
  const url = new URL(path.replace(/^\//, ""), ROOT);
  for (const [name, value] of Object.entries(query)) {
    if (value === null || value === undefined || value === "") continue;
    for (const item of Array.isArray(value) ? value : [value]) {
      url.searchParams.append(name, String(item));
    }
  }
  if (user) url.searchParams.set("user_id", user);
  return url;
}

/**
 * Call the API. ``as``: "json" (default), "blob" or "text". ``user``: the user to act for
 * (defaults to the signed-in choice). ``key``: a key other than the stored one (sign-in).
 */
export async function api(path, options = {}) {
  const { method = "GET", query = {}, body, as = "json" } = options;
  const key = options.key ?? auth.key;
  const user = options.user ?? auth.user;
  const headers = { Accept: as === "json" ? "application/json" : "*/*" };
  if (key) headers.Authorization = `Bearer ${key}`;
  const init = { method, headers, cache: "no-store", credentials: "omit" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(apiUrl(path, query, user), init);
  } catch (error) {
    throw new ApiError(0, "network_error", `the server could not be reached (${error.message})`);
  }
  if (!response.ok) {
    const error = await errorOf(response);
    if (error.status === 401 && options.key === undefined) emit("unauthorized", error);
    if (needsUser(error) && options.key === undefined) emit("needsUser", error);
    throw error;
  }
  if (as === "blob") return response.blob();
  return as === "text" ? response.text() : response.json();
}

/** Whether an error says the key acts for several users and a user id must be chosen. */
export function needsUser(error) {
  return error.code === "user_required";
}

async function errorOf(response) {
  let code = `http_${response.status}`;
  let message = response.statusText || "request failed";
  let field;
  try {
    const body = await response.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
      field = body.error.field;
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, code, message, field);
}

/** Every item of a cursor-paginated listing, page by page (``onPage`` sees each). */
export async function pages(path, query, onPage) {
  let cursor = null;
  do {
    const page = await api(path, { query: { ...query, cursor } });
    await onPage(page);
    cursor = page.next_cursor;
  } while (cursor);
}

// Image bytes need the auth header, so they are fetched and shown from blob: URLs,
// one fetch per image id.
const images = new Map();

/** A blob: URL of an image's original bytes (GET /v1/images/{image_id}). */
export function imageUrl(imageId) {
  const cacheKey = `${auth.user}\u0000${imageId}`;
  if (!images.has(cacheKey)) {
    const loading = api(`/v1/images/${encodeURIComponent(imageId)}`, { as: "blob" }).then(
      (blob) => URL.createObjectURL(blob),
    );
    loading.catch(() => images.delete(cacheKey));
    images.set(cacheKey, loading);
  }
  return images.get(cacheKey);
}

/** Forget cached images (on sign-out or user change). */
export function forgetImages() {
  for (const loading of images.values()) {
    loading.then((url) => URL.revokeObjectURL(url)).catch(() => {});
  }
  images.clear();
}
