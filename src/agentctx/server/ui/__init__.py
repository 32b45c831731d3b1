"""The web inspector: a single-page app at ``/ui`` that reads the REST API with the
caller's own key, so it shows exactly what that key may see."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"


def mount_inspector(app: FastAPI) -> None:
    """Serve the inspector's page at ``/ui`` and its assets under ``/ui/static``."""

    @app.get("/ui", include_in_schema=False)
    def inspector() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui")

    app.mount("/ui/static", StaticFiles(directory=STATIC), name="inspector-static")
