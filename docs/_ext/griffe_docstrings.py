"""A Griffe extension for the API reference: our docstrings are written for ``help()`` and doctest
(reStructuredText roles, ``>>>`` examples); this turns them into Markdown before mkdocstrings renders
them, without touching the source.

* a ``>>>`` example (up to the next blank line) becomes a fenced ``pycon`` block, so that its
  brackets are not read as Markdown links;
* ``:mod:`~a.b```, ``:class:`a.B``` and the other Sphinx roles become code spans (``b``, ``a.B``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:mod|class|func|meth|attr|exc|data|obj|const|py:\w+):`(~?)([^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


def markdown(text: str) -> str:
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i].lstrip())
                i += 1
            if out and out[-1].strip():
                out.append("")
            out += [f"{indent}```pycon", *(indent + b for b in block), f"{indent}```"]
            continue
        out.append(ROLE.sub(_role, line))
        i += 1
    return "\n".join(out)


class DocstringsAsMarkdown(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and "```pycon" not in obj.docstring.value:
            obj.docstring.value = markdown(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self.on_object(obj=pkg)
