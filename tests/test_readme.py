"""The README is the front door: what mqbalance is and for whom first, then the two commands, a short
example per product (run, with every other code block, by tests/test_docs.py) and links into docs/."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_opens_with_the_two_commands():
    head = README.read_text(encoding="utf-8").split("```")[1]
    assert "make example" in head and "make test" in head


def test_readme_says_what_it_is_before_anything_else_and_stays_short():
    text = README.read_text(encoding="utf-8")
    first_paragraph = text.split("\n\n")[1]
    assert first_paragraph.startswith("mqbalance ") and "for the people who run" in first_paragraph
    assert len(text.splitlines()) <= 200


def test_readme_has_a_python_example_per_product():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    code = "\n".join(blocks)
    for product in ("from mqbalance import", "mqbalance.kafka", "mqbalance.fault", "mqbalance.fleet"):
        assert product in code, product


def test_readme_links_point_into_the_tree():
    root = README.parent
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8")):
        assert (root / target).exists(), target
