"""The README's Python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_example_runs():
    block = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert block is not None
    exec(compile(block.group(1), "README.md", "exec"), {})


def test_readme_opens_with_the_two_commands():
    head = README.read_text(encoding="utf-8").split("```")[1]
    assert "make example" in head and "make test" in head
