"""The command line as a plain ``pip install agentctx`` leaves it: no optional extra.

Each command runs in a subprocess whose imports cannot see any module an extra brings
(the extras of pyproject.toml and everything they pull in, less what the core
dependencies pull in, from the installed packages' metadata). A command that needs no
extra works; one that needs an extra ends with its ``pip install`` line on one line and
exit code 2, never a traceback.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Runs the CLI with the import system's path finder blind to the hidden modules, as if
# they were not installed (``find_spec`` answers None, ``import`` raises
# ModuleNotFoundError). argv: hidden modules (comma-separated), then the CLI's arguments.
RUNNER = """
import importlib.machinery, sys

hidden = set(sys.argv[1].split(","))


class HidingFinder(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in hidden:
            return None
        return super().find_spec(name, path, target)


sys.meta_path[:] = [
    HidingFinder if finder is importlib.machinery.PathFinder else finder
    for finder in sys.meta_path
]
for name in [m for m in sys.modules if m.partition(".")[0] in hidden]:
    del sys.modules[name]
sys.argv = ["agentctx", *sys.argv[2:]]
from agentctx.cli.main import app

app()
"""

_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse(requirement: str) -> tuple[str, set[str], str]:
    """(canonical name, extras asked for, marker) of a requirement string."""
    spec, _, marker = requirement.partition(";")
    found = _REQUIREMENT.match(spec)
    assert found is not None, requirement
    extras = {_canonical(e) for e in (found.group(2) or "").split(",") if e.strip()}
    return _canonical(found.group(1)), extras, marker


def _closure(requirements: Iterable[str]) -> set[str]:
    """The installed distributions ``requirements`` pull in, transitively (platform
    markers are taken as true: what might be pulled in counts)."""
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    todo = [_parse(r)[:2] for r in requirements]
    while todo:
        name, extras = todo.pop()
        if (name, frozenset(extras)) in seen:
            continue
        seen.add((name, frozenset(extras)))
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        names.add(name)
        for requirement in requires:
            child, child_extras, marker = _parse(requirement)
            needed_by = _EXTRA_MARKER.search(marker)
            if needed_by is None or _canonical(needed_by.group(1)) in extras:
                todo.append((child, child_extras))
    return names


@cache
def hidden_modules() -> frozenset[str]:
    """Top-level modules of what the extras (not the core) install."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    core = _closure(project["dependencies"])
    extras = _closure(
        r for name, reqs in project["optional-dependencies"].items() if name != "dev" for r in reqs
    )
    hidden = extras - core
    modules = set()
    for module, dists in metadata.packages_distributions().items():
        owners = {_canonical(d) for d in dists}
        if owners & hidden and not owners & core:
            modules.add(module)
    return frozenset(modules)


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCTX_")}
    env["COLUMNS"] = "200"
    hidden = ",".join(sorted(hidden_modules()))
    return subprocess.run(
        [sys.executable, "-c", RUNNER, hidden, "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_the_hidden_modules_are_the_extras() -> None:
    hidden = hidden_modules()
    assert {"jwt", "fastapi", "starlette", "uvicorn", "mcp", "httpx", "openai"} <= hidden
    assert not {"sqlalchemy", "pydantic", "typer", "rich", "PIL", "numpy"} & hidden


def test_commands_that_need_no_extra_work_without_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = run(home, "--help")
    assert result.returncode == 0, result.stderr
    assert "serve" in result.stdout and "keys" in result.stdout
    result = run(home, "serve", "--help")
    assert result.returncode == 0 and "--demo" in result.stdout, result.stderr

    result = run(home, "demo")
    assert result.returncode == 0, result.stderr
    assert "chain intact" in result.stdout and "matches its content address" in result.stdout
    result = run(home, "sessions", "verify", "--all")
    assert result.returncode == 0 and "checked 1 sessions" in result.stdout, result.stderr
    # API keys are rows of the database: issuing one needs no server package.
    result = run(home, "keys", "create", "--user", "u1")
    assert result.returncode == 0 and "actx_" in result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "extra"),
    [(("serve",), "server"), (("mcp", "--user", "u1"), "mcp")],
    ids=["serve", "mcp"],
)
def test_a_command_that_needs_an_extra_names_its_pip_line(
    tmp_path: Path, args: tuple[str, ...], extra: str
) -> None:
    result = run(tmp_path / "home", *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert f"pip install 'agentctx[{extra}]'" in result.stderr
    assert "[missing_extra]" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
