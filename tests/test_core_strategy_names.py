"""``_core.Strategy(kind, ...)``: the binding builds strategies by name through the core
(``Strategy::from_name``); the errors a wrong name or a missing setting raise are the Python
classes, messages and values the binding has always given."""

from __future__ import annotations

import pytest

from mqbalance import _core
from mqbalance.exceptions import (
    UnknownCharsetError,
    UnknownStrategyError,
    UnsupportedStrategyError,
    VirtualNodeCountError,
)


@pytest.mark.parametrize(
    ("kind", "kwargs", "name"),
    [
        ("AVG", {}, "AVG"),
        ("AVG_BY_CIRCLE", {}, "AVG_BY_CIRCLE"),
        ("CONSISTENT_HASH", {"virtual_node_cnt": 3, "charset": "ISO-8859-1"}, "CONSISTENT_HASH"),
        ("CONSISTENT_HASH_BOUNDED", {"epsilon": 0.5}, "CONSISTENT_HASH_BOUNDED"),
        ("STICKY", {}, "STICKY"),
        ("MACHINE_ROOM", {"consumer_idcs": {"hz"}}, "MACHINE_ROOM"),
        ("MACHINE_ROOM_NEARBY", {"inner": _core.Strategy("AVG_BY_CIRCLE")}, "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE"),
    ],
)
def test_every_core_strategy_by_name(kind: str, kwargs: dict[str, object], name: str) -> None:
    assert _core.Strategy(kind, **kwargs).name == name


def test_unknown_name() -> None:
    with pytest.raises(UnknownStrategyError) as e:
        _core.Strategy("AVG_BY_HASH")
    assert str(e.value) == 'no core strategy named "AVG_BY_HASH"' and e.value.value == "AVG_BY_HASH"
    # names are Java's, in their case
    with pytest.raises(UnknownStrategyError):
        _core.Strategy("avg")


def test_nearby_needs_its_inner_strategy() -> None:
    with pytest.raises(UnsupportedStrategyError) as e:
        _core.Strategy("MACHINE_ROOM_NEARBY")
    assert str(e.value) == "MACHINE_ROOM_NEARBY needs an inner strategy"
    assert e.value.value == "MACHINE_ROOM_NEARBY"
    with pytest.raises(UnsupportedStrategyError) as e:
        _core.Strategy("MACHINE_ROOM_NEARBY", inner=_core.Strategy("STICKY"))
    assert e.value.value == "STICKY"


def test_charset_is_checked_first_and_settings_by_the_core() -> None:
    """The charset is read before the name (even strategies without a ring refuse a bad one)."""
    with pytest.raises(UnknownCharsetError) as e:
        _core.Strategy("AVG", charset="EBCDIC")
    assert e.value.value == "EBCDIC"
    with pytest.raises(UnknownCharsetError):
        _core.Strategy("NO_SUCH", charset="EBCDIC")
    with pytest.raises(VirtualNodeCountError) as e:
        _core.Strategy("CONSISTENT_HASH", virtual_node_cnt=-1)
    assert e.value.value == -1
