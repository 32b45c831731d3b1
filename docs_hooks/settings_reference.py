"""MkDocs hook: the configuration reference, generated from the settings models.

A page holding the marker ``<!-- settings-reference -->`` gets, in its place, one table
per settings model: every field of :class:`agentctx.config.Settings` and of the models
nested in it, with its type, default, bounds and description as the code declares them.
The reference is read from the models on every build, so it cannot drift from them.
"""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, to_jsonable_python

MARKER = "<!-- settings-reference -->"

# Bounds pydantic keeps as field metadata, and how the reference writes them.
_BOUNDS = {
    "ge": "≥",
    "gt": ">",
    "le": "≤",
    "lt": "<",
    "min_length": "length ≥",
    "max_length": "length ≤",
}


@dataclass(frozen=True)
class _Section:
    """One model of the settings tree and the path it is reached by (``context.adaptive``)."""

    path: str
    model: type[BaseModel]


def on_config(config: Any) -> Any:
    """Import the project's own sources (``src/``) ahead of any installed copy."""
    src = Path(config["config_file_path"]).parent / "src"
    if src.is_dir() and str(src) not in sys.path:
        sys.path.insert(0, str(src))
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the marker with the generated reference."""
    if MARKER not in markdown:
        return markdown
    from agentctx.config import Settings  # noqa: PLC0415 (after on_config set the path)

    return markdown.replace(MARKER, render_reference(Settings))


def render_reference(root: type[BaseModel]) -> str:
    """Markdown for ``root`` and every model nested in it, depth first."""
    sections = list(_walk(_Section("", root)))
    return "\n\n".join(_render_section(section) for section in sections) + "\n"


def _walk(section: _Section) -> Any:
    yield section
    for name, field in section.model.model_fields.items():
        nested = _nested_model(field.annotation)
        if nested is not None:
            path = f"{section.path}.{name}" if section.path else name
            yield from _walk(_Section(path, nested))


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The settings model a field holds (directly, optionally, or as list items)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _nested_model(arg)
        if found is not None:
            return found
    return None


def _render_section(section: _Section) -> str:
    model = section.model
    if section.path:
        title = f"### `{section.path}`"
        env = f"AGENTCTX_{section.path.split('.')[0].upper()}"
        where = (
            f"YAML key `{section.path}`; from the environment, as JSON in `{env}`"
            if "." not in section.path
            else f"YAML key `{section.path}`"
        )
    else:
        title = "### Top-level settings"
        where = (
            "Each field is the YAML key of the same name, or `AGENTCTX_<FIELD>` in the environment"
        )
    lines = [title, "", f"*{where}; model `{model.__module__}.{model.__qualname__}`.*", ""]
    doc = _docstring(model)
    if doc:
        lines += [doc, ""]
    lines += ["| Field | Type | Default | Description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        anchor_path = f"{section.path}.{name}" if section.path else name
        nested = _nested_model(field.annotation)
        default = (
            f"see [`{anchor_path}`](#{_anchor(anchor_path)})"
            if nested is not None and _is_model_default(field)
            else _default(field)
        )
        lines.append(
            "| "
            + " | ".join(
                (
                    f"`{name}`",
                    _type_name(field.annotation),
                    default,
                    _cell(_description(field)),
                )
            )
            + " |"
        )
    return "\n".join(lines)


def _anchor(path: str) -> str:
    """The id the Markdown toc extension gives the heading ``### `path` ``."""
    return re.sub(r"[^a-z0-9_\-]", "", path.lower())


def _is_model_default(field: FieldInfo) -> bool:
    return isinstance(field.get_default(call_default_factory=True), BaseModel)


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is PydanticUndefined:
        return "required"
    rendered = to_jsonable_python(value)
    if rendered is None:
        return "`null`"
    if isinstance(rendered, bool):
        return f"`{str(rendered).lower()}`"
    if isinstance(rendered, list | dict) and not rendered:
        return "`[]`" if isinstance(rendered, list) else "`{}`"
    text = rendered if isinstance(rendered, str) else _compact_json(rendered)
    return f"`{_cell(text)}`"


def _compact_json(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_compact_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_compact_json(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _description(field: FieldInfo) -> str:
    parts = [_rst_to_markdown(field.description or "")]
    bounds = [
        f"{_BOUNDS[key]} {getattr(meta, key)}"
        for meta in field.metadata
        for key in _BOUNDS
        if getattr(meta, key, None) is not None
    ]
    if bounds:
        parts.append(f"({', '.join(bounds)})")
    return " ".join(part for part in parts if part)


def _type_name(annotation: Any) -> str:
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        return " \\| ".join(f"`{arg!r}`".replace("'", '"') for arg in args)
    if origin in (Union, types.UnionType):
        return " \\| ".join(_type_name(arg) for arg in args)
    if origin is not None:
        inner = ", ".join("…" if arg is Ellipsis else _type_name(arg) for arg in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if annotation is type(None):
        return "null"
    return getattr(annotation, "__name__", str(annotation))


def _docstring(model: type[BaseModel]) -> str:
    doc = model.__doc__ or ""
    if not doc or doc == BaseModel.__doc__:
        return ""
    # Paragraphs of the docstring, each joined into one line.
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", doc.strip())]
    return "\n\n".join(_rst_to_markdown(p) for p in paragraphs)


def _rst_to_markdown(text: str) -> str:
    """``code`` and :role:`name` (the docstrings' reStructuredText) as Markdown code."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped, and outside code
    spans no ``<`` that Markdown would take for HTML (``<home>``)."""
    spans = " ".join(text.split()).replace("|", "\\|").split("`")
    # Even pieces are outside code spans, odd ones inside.
    return "`".join(
        piece if i % 2 else piece.replace("<", "&lt;").replace(">", "&gt;")
        for i, piece in enumerate(spans)
    )
