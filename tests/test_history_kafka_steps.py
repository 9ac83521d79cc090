"""How :func:`mqbalance.history.kafka.generation_steps` cuts a classic group's rebalances into
episodes when the watcher's ticks miss part of one (a loaded machine, a 1 s watcher), and which
recorded generation the watcher pairs with a described state
(:func:`mqbalance.history.kafka_collector.described_generation`): each rebalance is one episode
with the member change that made it, never a generation alone."""

from __future__ import annotations

from typing import Any

from mqbalance.fleet.kafka.group_log import GroupRecord
from mqbalance.history.kafka import generation_steps
from mqbalance.history.kafka_collector import described_generation


def _rows(*ticks: tuple[int, str, str, int]) -> list[dict[str, Any]]:
    return [{"ts": t, "event": e, "state": s, "generation": g, "group_type": "classic"} for t, e, s, g in ticks]


def test_a_rebalance_first_seen_in_completing_rebalance_starts_its_episode_there() -> None:
    # a member joined: PreparingRebalance fell between two ticks, its generation is recorded when
    # the group becomes Stable; the next rebalance (a leave) is an episode of its own
    steps = generation_steps(
        _rows(
            (0, "checkpoint", "Stable", 4),
            (10, "state", "CompletingRebalance", 4),
            (11, "state", "Stable", 5),
            (20, "state", "PreparingRebalance", 5),
            (21, "state", "Stable", 6),
        )
    )
    assert [(s["ts"], s["inc"], s["starts"]) for s in steps if s["starts"] or s["inc"]] == [
        (10, 0, True),
        (11, 1, False),
        (20, 0, True),
        (21, 1, False),
    ]


def test_a_group_that_appears_stable_counts_its_generation_at_once() -> None:
    # the watcher sees the group first Stable with its members: its generation, read after the
    # description, is there in the same tick (one episode with the joins, not one without)
    steps = generation_steps(_rows((0, "appear", "Stable", 1), (5, "state", "PreparingRebalance", 1)))
    assert [(s["ts"], s["inc"], s["starts"]) for s in steps] == [(0, 1, True), (5, 0, True)]


def test_the_watcher_pairs_a_described_state_with_the_generation_it_is_at() -> None:
    # the coordinator's record of generation 4 was appended between the description (still
    # PreparingRebalance) and the log's read: that group is still at 3; a Stable one is at 4
    r3, r4 = (GroupRecord("consumer", n, "range", "m1", None) for n in (3, 4))
    assert described_generation("PreparingRebalance", r3, r4) == 3
    assert described_generation("CompletingRebalance", r3, r4) == 4
    assert described_generation("Stable", r3, r4) == 4
    assert described_generation("Stable", None, None) is None
    assert described_generation("PreparingRebalance", None, r4) is None  # first seen: not known yet
