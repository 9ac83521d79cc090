"""One semantics vocabulary for every area (mqbalance.versions.Semantics)."""

from __future__ import annotations

import pytest

from mqbalance import strategy
from mqbalance.exceptions import InvalidInputError
from mqbalance.fault import MQFaultStrategy, ThreadLocalIndex
from mqbalance.rebalance import ConsumerManager, PushConsumer
from mqbalance.versions import Semantics


def test_values_and_parse():
    assert [s.value for s in Semantics] == ["4.x", "5.x"]
    assert Semantics.parse("4.x") is Semantics.V4 and Semantics.parse("5.x") is Semantics.V5
    assert Semantics.parse(Semantics.V5) is Semantics.V5
    assert Semantics.V4 == "4.x" and f"{Semantics.V5}" == "5.x"
    for bad in ("4", "5.X", "5.x.x", "4.9.x", "", None, 4):
        with pytest.raises(InvalidInputError) as info:
            Semantics.parse(bad)  # type: ignore[arg-type]
        assert info.value.value == bad


@pytest.mark.parametrize("spelling", ["4.x", Semantics.V4, "5.x", Semantics.V5])
def test_every_area_takes_every_spelling(spelling):
    expected = Semantics.parse(spelling)
    assert MQFaultStrategy(semantics=spelling).semantics is expected
    ThreadLocalIndex(semantics=spelling)
    cm = ConsumerManager(semantics=spelling)
    assert cm.semantics is expected and cm.v5 == (expected is Semantics.V5)
    c = PushConsumer("c", "cg", ["T"], strategy("AVG"), None, lambda topic: None, semantics=spelling)  # type: ignore[arg-type]
    assert c.semantics is expected
    assert c.pull_delay_ms == (500 if expected is Semantics.V5 else 0)
