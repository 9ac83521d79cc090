"""The tick loop's offsets schedule (``mqbalance.history.ticking.TickLoop``): offsets are read on
the first tick, then once ``offsets_interval`` has passed on the monotonic clock since the last
reading; ``0`` reads them on every tick, however fast the ticks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mqbalance.exceptions import InvalidInputError
from mqbalance.history.ticking import Observation, TickLoop


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Recorder(TickLoop):
    """A watcher of nothing that reads offsets whenever the loop says they are due."""

    def observe(self, due_offsets: bool) -> Observation:
        return Observation(state={}, gaps=[], offsets_read=due_offsets, requests=0)

    def changes(self, old: Any, observation: Observation) -> dict[str, list[dict[str, Any]]]:
        return {}

    def whole(self, state: Any) -> dict[str, list[dict[str, Any]]]:
        return {}


def kinds(loop: Recorder, clock: Clock, steps: list[float]) -> list[str]:
    out = []
    for step in steps:
        clock.now += step
        out.append(loop.tick().kind)
    return out


def test_offsets_are_read_once_their_interval_has_passed(tmp_path: Path) -> None:
    clock = Clock()
    loop = Recorder(tmp_path, kind="kafka", offsets_interval=5, monotonic=clock)
    try:
        got = kinds(loop, clock, [0, 1, 3.9, 0.1, 4.99, 0.01, 0])
    finally:
        loop.close()
    assert got == ["both", "membership", "membership", "both", "membership", "both", "membership"]


def test_an_offsets_interval_of_zero_reads_offsets_on_every_tick(tmp_path: Path) -> None:
    clock = Clock()
    loop = Recorder(tmp_path, kind="kafka", offsets_interval=0, monotonic=clock)
    try:
        got = kinds(loop, clock, [0, 0, 0, 0.001])  # the clock need not move between ticks
        loop.offsets_interval = 10**6  # the schedule may be changed between ticks
        got += kinds(loop, clock, [0, 1])
    finally:
        loop.close()
    assert got == ["both"] * 4 + ["membership"] * 2


@pytest.mark.parametrize("bad", [-1, -0.001, float("nan"), 1e8, "5", True, None])
def test_a_bad_offsets_interval_is_named(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="offsets interval"):
        Recorder(tmp_path, kind="kafka", offsets_interval=bad)
