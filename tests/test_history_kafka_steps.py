"""How :func:`mqbalance.history.kafka.generation_steps` cuts a classic group's rebalances into
episodes when the watcher's ticks miss part of one (a loaded machine, a 1 s watcher), and which
recorded generation the watcher pairs with a described state
(:func:`mqbalance.history.kafka_collector.described_generation`): each rebalance is one episode
with the member change that made it, never a generation alone."""

from __future__ import annotations

from typing import Any

from mqbalance.fleet.kafka.group_log import GroupRecord
from mqbalance.history.kafka import analyse_kafka_group, generation_steps
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


# Recorded by the watcher on Apache Kafka 4.4.0 (tests/test_history_kafka_live.py): s-in joined
# (generation 2, Stable at 44.244 s), then j2 and s-out (generation 3); the ticks saw
# CompletingRebalance, then PreparingRebalance, never the Stable between them.
_BACK_TO_BACK = [
    {"ts": 0, "event": "checkpoint", "state": "Stable", "generation": 1},
    {"ts": 44_130, "event": "state", "state": "CompletingRebalance", "generation": 2},
    {"ts": 46_127, "event": "state", "state": "PreparingRebalance", "generation": 2},
    {"ts": 48_123, "event": "state", "state": "Stable", "generation": 3},
]
_HOST = "/127.0.0.1"


def _member(ts: int, event: str, member_id: str, client_id: str, instance_id: str | None = None) -> dict[str, Any]:
    return {"ts": ts, "event": event, "member_id": member_id, "client_id": client_id, "client_addr": _HOST,
            "instance_id": instance_id}  # fmt: skip


def _owner(ts: int, event: str, partition: int, owner: str) -> dict[str, Any]:
    return {"ts": ts, "event": event, "topic": "churn", "broker_name": "", "queue_id": partition, "owner": owner,
            "processes": 1}  # fmt: skip


def _episodes(groups: list[dict[str, Any]], members: list[dict[str, Any]], ownership: Any = ()) -> list[Any]:
    groups = [{**r, "group_type": "classic", "subscriptions": ["churn"], "strategy": "range"} for r in groups]
    found = analyse_kafka_group(groups, members, list(ownership), [], since=0, until=60_000, final=False,
                                readings=[], offset_readings=[])  # fmt: skip
    return [(r["start"], r["rebalances"], r["causes"]) for kind, r in found if kind == "episode"]


def test_preparing_rebalance_again_from_completing_rebalance_is_the_next_rebalance() -> None:
    # the second rebalance is an episode of its own with the joins that made it, not one with no
    # member change after a first episode holding every join
    members = [
        _member(0, "checkpoint", "j1-1", "j1"),
        _member(44_130, "join", "static-in-1", "s-in", "static-in"),
        _member(46_127, "join", "j2-1", "j2"),
        _member(46_127, "join", "static-out-1", "s-out", "static-out"),
    ]
    assert _episodes(_BACK_TO_BACK, members) == [
        (44_130, 1, [f"joined: s-in ({_HOST}, member static-in-1, instance static-in)"]),
        (
            46_127,
            1,
            [
                f"joined: j2 ({_HOST}, member j2-1)",
                f"joined: s-out ({_HOST}, member static-out-1, instance static-out)",
            ],
        ),
    ]
    # the same when the first generation is read only after the group went back to PreparingRebalance
    late = [{**r, "generation": 1} if r["ts"] == 44_130 else r for r in _BACK_TO_BACK]
    steps = generation_steps([{**r, "group_type": "classic"} for r in late])
    assert [(s["ts"], s["inc"], s["starts"], s["to_previous"]) for s in steps] == [
        (0, 0, False, False),
        (44_130, 0, True, False),
        (46_127, 1, True, True),
        (48_123, 1, False, False),
    ]
    assert [(e[0], e[1]) for e in _episodes(late, members)] == [(44_130, 1), (46_127, 1)]


def test_a_generation_with_no_change_seen_says_so_and_names_what_moved() -> None:
    # a member's JoinGroup with the membership unchanged, begun and settled between two ticks:
    # the generation moved, the members did not; the partitions j1 gave to j2 are named
    groups = [
        {"ts": 0, "event": "checkpoint", "state": "Stable", "generation": 4},
        {"ts": 10_000, "event": "state", "state": "Stable", "generation": 5},
    ]
    members = [_member(0, "checkpoint", "j1-1", "j1"), _member(0, "checkpoint", "j2-1", "j2")]
    own = [_owner(0, "checkpoint", p, "j1-1") for p in (0, 1)] + [_owner(10_000, "change", 1, "j2-1")]
    assert _episodes(groups, members, own) == [
        (10_000, 1, [
            "generation advanced with no membership change seen between ticks",
            f"assignment changed: j1 ({_HOST}, member j1-1); j2 ({_HOST}, member j2-1)",
        ]),
    ]  # fmt: skip
    # a static member replaced in the tick before (no generation with it) is named too
    members += [_member(8_000, "leave", "j2-1", "j2"), _member(8_000, "join", "j2-2", "j2", "s")]
    members[1]["instance_id"] = "s"
    assert _episodes(groups, members)[0][2] == [
        "generation advanced with no membership change seen between ticks",
        f"static member replaced 2 s before: instance s, member j2-1 -> j2 ({_HOST}, member j2-2, instance s)",
    ]


def test_still_preparing_with_a_newer_generation_is_the_next_rebalance() -> None:
    # recorded on Apache Kafka 4.4.0: j2 and s-out joined (PreparingRebalance at 05:11), the
    # generation they made was read at 05:13 with the group in PreparingRebalance again for s-in
    groups = [
        {"ts": 0, "event": "checkpoint", "state": "Stable", "generation": 1},
        {"ts": 11_164, "event": "state", "state": "PreparingRebalance", "generation": 1},
        {"ts": 13_167, "event": "state", "state": "PreparingRebalance", "generation": 2},
        {"ts": 15_167, "event": "state", "state": "Stable", "generation": 4},
    ]
    members = [
        _member(0, "checkpoint", "j1-1", "j1"),
        _member(11_164, "join", "j2-1", "j2"),
        _member(11_164, "join", "static-out-1", "s-out", "static-out"),
        _member(13_167, "join", "static-in-1", "s-in", "static-in"),
    ]
    assert _episodes(groups, members) == [
        (11_164, 1, [
            f"joined: j2 ({_HOST}, member j2-1)",
            f"joined: s-out ({_HOST}, member static-out-1, instance static-out)",
        ]),
        (13_167, 2, [f"joined: s-in ({_HOST}, member static-in-1, instance static-in)"]),
    ]  # fmt: skip
