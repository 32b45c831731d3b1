"""The documentation: the site builds without a warning, and the README stays true.

The site (``mkdocs.yml``, pages under ``docs/``) is built with ``--strict`` into a
temporary folder, as a reader would build it; the README's links, its two commands and
its quickstart are checked against the repository, ``.ci/run`` and the engine.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from agentctx.config import Settings

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAIN_COMMAND = 'pip install ".[server]" && agentctx serve --demo'

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
# [text](target) and [text](target "title"); images too.
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _blocks(path: Path, language: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [body for lang, body in _FENCE.findall(text) if lang == language]


def _ci_test_command() -> str:
    """The command ``.ci/run`` runs: its last line that is not a comment."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    return commands[-1]


@pytest.mark.slow
def test_site_builds_strict_without_a_warning(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert not [line for line in output.splitlines() if "WARNING" in line], output

    # The configuration reference was generated: every setting is on the page, nested ones
    # under their dotted path.
    reference = (site / "reference" / "configuration" / "index.html").read_text(encoding="utf-8")
    assert "settings-reference" not in reference
    for name in Settings.model_fields:
        assert f"<code>{name}</code>" in reference, name
    assert "context.adaptive" in reference
    assert "<code>low_water</code>" in reference

    # The API reference was rendered from the docstrings.
    engine_page = (site / "reference" / "api" / "engine" / "index.html").read_text(encoding="utf-8")
    for method in ("create_session", "get_session", "delete_user_data", "restore_image"):
        assert method in engine_page, method

    # Nothing on the site is fetched from elsewhere when it is read (no web fonts).
    for page in site.rglob("*.html"):
        assert "fonts.googleapis.com" not in page.read_text(encoding="utf-8"), page


def test_every_relative_link_in_the_readme_resolves() -> None:
    targets = _LINK.findall(README.read_text(encoding="utf-8"))
    relative = [
        target.split("#", 1)[0]
        for target in targets
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")
    ]
    assert len(relative) >= 10, "the README links to the documentation pages"
    missing = [target for target in relative if not (ROOT / target).exists()]
    assert not missing, missing


def test_the_readme_commands_are_the_ones_ci_runs() -> None:
    commands = [block.strip() for block in _blocks(README, "bash")]
    assert commands == [MAIN_COMMAND, _ci_test_command()]
    # The pages that repeat them repeat them exactly.
    for page in ("getting-started.md", "how-to/development.md"):
        repeated = [block.strip() for block in _blocks(ROOT / "docs" / page, "bash")]
        assert _ci_test_command() in repeated, page
    assert MAIN_COMMAND in [
        block.strip() for block in _blocks(ROOT / "docs" / "getting-started.md", "bash")
    ]


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_the_quickstart_runs(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTCTX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENTCTX_EMBEDDINGS", '{"provider": "hashing"}')
    monkeypatch.delenv("AGENTCTX_URL", raising=False)
    monkeypatch.delenv("AGENTCTX_CONFIG", raising=False)
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (30, 120, 200)).save(buffer, format="PNG")
    code = _blocks(ROOT / page, "python")[0]
    namespace: dict[str, object] = {"png_bytes": buffer.getvalue()}
    exec(compile(code, page, "exec"), namespace)  # the page's own code, as a reader runs it
    window = namespace["window"]
    assert window.tokens <= 4000  # type: ignore[attr-defined]
    assert (tmp_path / "home").is_dir()


def test_the_readme_memory_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTCTX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENTCTX_EMBEDDINGS", '{"provider": "hashing"}')
    monkeypatch.delenv("AGENTCTX_URL", raising=False)
    monkeypatch.delenv("AGENTCTX_CONFIG", raising=False)
    blocks = _blocks(README, "python")
    assert len(blocks) == 2  # the quickstart, then facts in time
    namespace: dict[str, object] = {}
    exec(compile(blocks[1], "README.md", "exec"), namespace)  # as a reader runs it
    now, then = namespace["now"], namespace["then"]
    assert now.content == "User works as a software engineer"  # type: ignore[attr-defined]
    assert then.content == "User is a nurse"  # type: ignore[attr-defined]
    assert then.status == "stale" and then.superseded_by == now.memory_id  # type: ignore[attr-defined]
