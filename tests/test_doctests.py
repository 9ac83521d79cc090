"""Every worked example in the installed package's docstrings runs and holds."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import mqbalance

# Old module names kept for compatibility: importing them warns (tested in test_registry.py).
MOVED = {"mqbalance.audit", "mqbalance.snapshot", "mqbalance.spark"}
MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(mqbalance.__path__, "mqbalance.")
    if not m.name.endswith("_core") and m.name not in MOVED
)


@pytest.mark.parametrize("name", ["mqbalance", *MODULES])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, extraglobs={"MessageQueue": mqbalance.MessageQueue})
    assert result.failed == 0


def test_every_public_module_has_examples() -> None:
    with_examples = [n for n in MODULES if doctest.DocTestFinder().find(importlib.import_module(n))]
    assert {
        "mqbalance.allocation.strategies",
        "mqbalance.allocation.bulk",
        "mqbalance.allocation.models",
        "mqbalance.allocation.ordering",
    } <= set(with_examples)
