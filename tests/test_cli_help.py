"""What ``agentctx … --help`` shows, rendered as a user sees it, and the ``keys create``
line: flags take no value and show no type, a required option says so, brackets in
output are text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from agentctx.cli.main import app
from test_cli_blobs import cli

runner = CliRunner()


def command_paths() -> list[tuple[str, ...]]:
    """Every command and group of the CLI, as the words that name it."""
    paths: list[tuple[str, ...]] = [()]

    def walk(group: object, prefix: tuple[str, ...]) -> None:
        for name, command in getattr(group, "commands", {}).items():
            paths.append((*prefix, name))
            walk(command, (*prefix, name))

    walk(typer.main.get_command(app), ())
    return paths


def help_text(*path: str) -> str:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    return result.stdout


def option_line(text: str, option: str) -> str:
    """The help row of ``option`` (its first line)."""
    [line] = [line for line in text.splitlines() if re.search(rf"\s{option}\s", line)]
    return line


def test_the_walk_finds_every_command() -> None:
    paths = command_paths()
    assert {("serve",), ("demo",), ("sessions", "verify"), ("keys", "create")} <= set(paths)
    assert len(paths) > 30


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "agentctx")
def test_flags_show_no_type(path: tuple[str, ...]) -> None:
    text = help_text(*path)
    assert "--help" in option_line(text, "--help")
    assert "<bool>" not in text
    assert "<" not in option_line(text, "--help")


def test_flags_show_no_type_where_options_with_values_do() -> None:
    text = help_text("serve")
    assert "<int>" in option_line(text, "--port")
    for flag in ("--demo", "--ui", "--bootstrap-key"):
        assert "<" not in option_line(text, flag), flag
    assert "<" not in option_line(help_text("sessions", "verify"), "--all")
    assert "<" not in option_line(help_text(), "--version")


@pytest.mark.parametrize("command", ["show", "context", "import", "export"])
def test_a_required_user_is_marked_required(command: str) -> None:
    line = option_line(help_text("sessions", command), "--user")
    assert "[required]" in line and line.lstrip("│ ").startswith("*")


def test_arguments_are_named_in_capitals() -> None:
    for path in command_paths():
        usage = next(line for line in help_text(*path).splitlines() if "Usage:" in line)
        arguments = usage.partition("[OPTIONS]")[2]
        assert arguments == arguments.upper(), usage


def test_verify_says_when_it_needs_a_user() -> None:
    text = help_text("sessions", "verify")
    assert "required with SESSION" in " ".join(text.split())


def test_keys_create_prints_its_scopes_and_users(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, out, err = cli(home, "keys", "create", "--user", "u1", "--scope", "read")
    assert code == 0, err
    assert re.search(r"^key [0-9a-f]{16} for u1 \[read\], tenant default$", out, re.M), out
    code, out, _ = cli(home, "keys", "create", "--scope", "admin", "--scope", "read")
    assert code == 0
    assert re.search(r"^key [0-9a-f]{16} for \(admin\) \[admin, read\], tenant default$", out, re.M)
