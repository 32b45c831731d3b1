"""Griffe extension: the docstrings' reStructuredText roles as Markdown for the API pages.

The source's docstrings name other objects the Sphinx way (``:class:`Redactor```,
``:meth:`~Session.refresh```), which Markdown would print as is. On the site each
becomes inline code with the name as written after the tilde's last dot, as Sphinx
shows it; the source stays as it is.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|meth|func|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")


def _markdown(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    shown = target.rsplit(".", 1)[-1] if tilde else target
    return f"`{shown}`"


class RstRoles(griffe.Extension):
    """Rewrite roles in every docstring griffe loads."""

    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring, if it has one."""
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_markdown, obj.docstring.value)
