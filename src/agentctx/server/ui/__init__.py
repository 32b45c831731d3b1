"""The web inspector: a single-page app at ``/ui`` that reads the REST API with the
caller's own key, so it shows exactly what that key may see.

The page and its assets are static and hold no data; every read goes through the
API with the ``Authorization: Bearer`` header the user signed in with. The page's
Content-Security-Policy allows only the app's own scripts, styles and API (images
from ``blob:``/``data:`` URLs the app made), so nothing is fetched from elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' blob: data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    # The page is small and changes with the package: always revalidate.
    "Cache-Control": "no-cache",
}


def mount_inspector(app: FastAPI) -> None:
    """Serve the inspector's page at ``/ui`` and its assets under ``/ui/static``."""

    @app.get("/ui", include_in_schema=False)
    def inspector() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html", headers=PAGE_HEADERS)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui")

    app.mount("/ui/static", StaticFiles(directory=STATIC), name="inspector-static")
