// Hash routing: "#/sessions/<id>/context?query=x" -> {path: ["sessions", id, "context"],
// query: URLSearchParams}. Views render into one element; a view whose route was left
// while it awaited the API sees ``route.current()`` turn false and stops drawing.

export function parseHash(hash = location.hash) {
  const text = hash.replace(/^#\/?/, "");
  const [pathPart, queryPart = ""] = text.split("?", 2);
  const path = pathPart
    .split("/")
    .filter((segment) => segment !== "")
    .map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        return segment;
      }
    });
  return { path, query: new URLSearchParams(queryPart) };
}

/** A hash for a path and query: hashFor(["sessions", id], {search: "x"}). */
export function hashFor(path, query = {}) {
  const encoded = path.map((segment) => encodeURIComponent(segment)).join("/");
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== null && value !== undefined && value !== "") params.set(name, String(value));
  }
  const search = params.toString();
  return `#/${encoded}${search ? `?${search}` : ""}`;
}

export class Router {
  constructor(resolve) {
    this.resolve = resolve; // (route) => Promise<void>
    this.generation = 0;
    window.addEventListener("hashchange", () => this.render());
  }

  /** Go to ``hash``; renders again even when it is the current hash (a re-submit). */
  navigate(hash) {
    if (location.hash === hash) this.render();
    else location.hash = hash;
  }

  async render() {
    const generation = ++this.generation;
    const route = parseHash();
    route.current = () => generation === this.generation;
    await this.resolve(route);
  }
}
