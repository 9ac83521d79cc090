"""A Kafka group converted between the classic and the consumer protocol (KIP-848's online upgrade
and downgrade, and the empty group made anew on the other protocol), as the Kafka watcher records
it, analysed by :func:`mqbalance.history.kafka.analyse_kafka_group`: the rebalance count is the
broker's across the change, and the episode of the change says so. The rows are what the live
upgrade on Apache Kafka 4.4.0 recorded (``tests/test_history_kafka_churn_live.py``), reduced."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from mqbalance.history.job import analyse
from mqbalance.history.kafka import analyse_kafka_group
from mqbalance.history.writer import HistoryWriter


def _group(ts: int, event: str, kind: str, state: str, generation: int | None, strategy: str) -> dict[str, Any]:
    return {
        "ts": ts, "event": event, "group_type": kind, "state": state, "generation": generation,
        "assignment_epoch": generation if kind == "consumer" else None, "subscriptions": ["t"], "strategy": strategy,
    }  # fmt: skip


def _member(ts: int, event: str, member_id: str, client_id: str) -> dict[str, Any]:
    return {"ts": ts, "event": event, "member_id": member_id, "client_id": client_id, "client_addr": "/127.0.0.1"}


def _analyse(groups: list[dict[str, Any]], members: list[dict[str, Any]]) -> dict[str, Any]:
    out = analyse_kafka_group(
        groups, members, [], [], since=0, until=60_000, final=False, readings=[], offset_readings=[]
    )  # fmt: skip
    found: dict[str, Any] = {"episode": []}
    for kind, row in out:
        if kind == "episode":
            found["episode"].append(row)
        elif kind == "kafka_group":
            found["group"] = row
    return found


def test_an_online_upgrade_continues_the_generation_and_says_the_protocol_changed() -> None:
    # 8 classic members, one stopped (generation 3 -> 4), started again with group.protocol=consumer:
    # the broker converts the group (epoch = generation 4) and its join bumps the epoch to 5
    groups = [
        _group(0, "checkpoint", "classic", "Stable", 3, "range"),
        _group(1000, "state", "classic", "PreparingRebalance", 3, "range"),
        _group(2000, "state", "classic", "Stable", 4, "range"),
        _group(5000, "subscription", "consumer", "Reconciling", 5, "uniform"),
        _group(5000, "state", "consumer", "Reconciling", 5, "uniform"),
        _group(6000, "state", "consumer", "Stable", 5, "uniform"),
        _group(9000, "state", "consumer", "Stable", 6, "uniform"),  # a classic member left
    ]
    members = [_member(0, "checkpoint", m, m[:2]) for m in ("u0-a", "u1-a")]
    members += [_member(1000, "leave", "u0-a", "u0"), _member(5000, "join", "Kq9", "u0")]
    members += [_member(9000, "leave", "u1-a", "u1")]
    found = _analyse(groups, members)
    assert found["group"]["rebalances"] == 3 and found["group"]["group_type"] == "consumer"
    episodes = found["episode"]
    assert [(e["start"], e["rebalances"], e["generation_from"], e["generation_to"]) for e in episodes] == [
        (1000, 1, 3, 4),
        (5000, 1, 4, 5),
        (9000, 1, 5, 6),
    ]
    assert episodes[1]["group_type"] == "consumer"
    assert episodes[1]["causes"] == [
        "protocol upgraded: classic -> consumer (assignor range -> uniform)",
        "joined: u0 (/127.0.0.1, member Kq9)",
    ]  # and no "subscription changed: assignor range -> uniform": the protocol's assignor came with it
    assert episodes[0]["causes"] == ["left: u0 (/127.0.0.1, member u0-a)"]
    assert episodes[2]["causes"] == ["left: u1 (/127.0.0.1, member u1-a)"]


def test_an_empty_group_made_anew_on_the_other_protocol_counts_from_zero() -> None:
    # an empty classic group at generation 5: a consumer-protocol member makes a new group (epoch 1)
    groups = [
        _group(0, "checkpoint", "classic", "Empty", 5, "range"),
        _group(3000, "subscription", "consumer", "Stable", 1, "uniform"),
        _group(3000, "state", "consumer", "Stable", 1, "uniform"),
    ]
    found = _analyse(groups, [_member(3000, "join", "Kq1", "k1")])
    assert found["group"]["rebalances"] == 1
    [episode] = found["episode"]
    assert episode["causes"][0] == "protocol upgraded: classic -> consumer (assignor range -> uniform)"
    assert (episode["rebalances"], episode["generation_from"], episode["generation_to"]) == (1, 5, 1)


def test_a_downgrade_counts_the_classic_generation_once_it_is_read() -> None:
    # consumer epoch 7; the last consumer-protocol member leaves a group of classic members: a classic
    # group, whose generation the watcher carries until the coordinator's record is read
    groups = [
        _group(0, "checkpoint", "consumer", "Stable", 7, "uniform"),
        _group(1000, "subscription", "classic", "PreparingRebalance", 7, "uniform"),
        _group(1000, "state", "classic", "PreparingRebalance", 7, "uniform"),
        _group(2000, "state", "classic", "Stable", 8, "range"),
    ]
    members = [_member(0, "checkpoint", m, m[:2]) for m in ("k0", "c1-a")] + [_member(1000, "leave", "k0", "k0")]
    found = _analyse(groups, members)
    assert found["group"]["rebalances"] == 1
    [episode] = found["episode"]
    assert episode["causes"] == ["protocol downgraded: consumer -> classic", "left: k0 (/127.0.0.1, member k0)"]
    # and an empty one made anew: its first generation, read a tick later, counts from 0
    groups = [
        _group(0, "checkpoint", "consumer", "Empty", 9, "uniform"),
        _group(1000, "subscription", "classic", "CompletingRebalance", 9, "range"),
        _group(1000, "state", "classic", "CompletingRebalance", 9, "range"),
        _group(2000, "state", "classic", "Stable", 1, "range"),
    ]
    found = _analyse(groups, [_member(1000, "join", "c1-b", "c1")])
    assert found["group"]["rebalances"] == 1


def test_the_upgrade_through_the_history_dataset_whole_and_in_spans(tmp_path: Path) -> None:
    """The same upgrade written through the real writer and analysed as ``mqbalance history`` does
    (in process; a span at a time gives the same)."""
    w = HistoryWriter(tmp_path, run_id="plan", kind="kafka")
    t0 = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
    group = {"group": "gu", "protocol_type": "consumer", "subscriptions": ["t"]}
    ticks: list[tuple[int, list[dict[str, Any]], list[dict[str, Any]]]] = [
        (0, [{**_group(0, "checkpoint", "classic", "Stable", 3, "range")}], [
            {**_member(0, "checkpoint", m, m[:2]), "group": "gu"} for m in ("u0-a", "u1-a")]),
        (10, [_group(0, "state", "classic", "PreparingRebalance", 3, "range")], [
            {**_member(0, "leave", "u0-a", "u0"), "group": "gu"}]),
        (11, [_group(0, "state", "classic", "Stable", 4, "range")], []),
        (20, [_group(0, e, "consumer", "Reconciling", 5, "uniform") for e in ("subscription", "state")], [
            {**_member(0, "join", "Kq9", "u0"), "group": "gu"}]),
        (21, [_group(0, "state", "consumer", "Stable", 5, "uniform")], []),
    ]  # fmt: skip
    for n, (s, groups, members) in enumerate(ticks, 1):
        events = {"groups": [{**group, **r} for r in groups], "members": members}
        for rows in events.values():
            for r in rows:
                r.pop("ts", None)
        w.commit_tick(n, t0 + dt.timedelta(seconds=s), events, {
            "kind": "membership", "checkpoint": s == 0, "duration_ms": 5, "skipped_before": 0, "clock_jump_ms": 0,
            "groups": 1, "changed_groups": 1, "requests": 4, "errors": 0})  # fmt: skip
    result = analyse(None, tmp_path, window=60)
    assert analyse(None, tmp_path, window=60, span=dt.timedelta(seconds=7)) == result
    assert [g["rebalances"] for g in result.groups] == [2]
    upgrade = [e for e in result.episodes if e["causes"][0].startswith("protocol")]
    assert [e["causes"] for e in upgrade] == [
        ["protocol upgraded: classic -> consumer (assignor range -> uniform)", "joined: u0 (/127.0.0.1, member Kq9)"]
    ]
