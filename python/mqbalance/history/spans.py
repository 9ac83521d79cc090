"""The analysis of a history, one span at a time, put together: the rows each span's tasks return
(an episode still open at a span's end goes on in the next span's prefix) as one
:class:`HistoryResult`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mqbalance.history.analysis import (
    duplicate_periods,
    ms,
)
from mqbalance.history.causes import UNSEEN

__all__ = ["HistoryResult"]


@dataclass
class HistoryResult:
    """Per group: episodes, flapping client ids, queue health, duplicated-client-id periods; and
    the groups ranked by episodes. A Kafka history (``cluster_kind`` ``"kafka"``) also has, per
    group, its rebalance count and last state (``groups``) and its static members replaced
    (``fenced``); its ``duplicate_ids`` are shared instance ids (``client_id`` holds the instance
    id, ``addresses`` the member ids)."""

    episodes: list[dict[str, Any]]
    flapping_clients: list[dict[str, Any]]
    flapping_groups: list[dict[str, Any]]
    health: list[dict[str, Any]]
    duplicate_ids: list[dict[str, Any]]
    cluster_kind: str = "rocketmq"
    groups: list[dict[str, Any]] = field(default_factory=list)
    fenced: list[dict[str, Any]] = field(default_factory=list)


def combine_spans(
    parts: Sequence[tuple[str, str, dict[str, Any]]],
    window: float,
    min_cycles: int,
    min_episodes: int,
    *,
    cluster_kind: str = "rocketmq",
) -> HistoryResult:
    """The spans' rows, in span order, as one result: an episode still open at a span's end goes
    on with the next span's prefix (and its first episode, when that starts less than ``window``
    after the open one's last change; a Kafka episode is one generation change: never joined
    with the next); flapping counts add up; each client id's moves are read across the spans as
    one; a Kafka group's rebalances add up."""
    kafka = cluster_kind == "kafka"
    result = HistoryResult([], [], [], [], [], cluster_kind=cluster_kind)
    per_group: dict[str, dict[str, Any]] = {}
    open_episode: dict[str, dict[str, Any]] = {}  # per group: the episode its next prefix goes on with
    latest: dict[str, dict[str, Any]] = {}  # per group: its last episode so far
    joins: dict[tuple[str, str], list[int]] = {}
    moves: dict[tuple[str, str], tuple[list[Any], list[Any]]] = {}
    for group, kind, row in parts:
        if kind == "prefix":
            e = open_episode.get(group)
            if e is not None:
                e["unowned_queue_s"] += row["unowned_queue_s"]
                e["double_owned_queue_s"] += row["double_owned_queue_s"]
                e["queue_changes"] += row["queue_changes"]
                if e["owned_at"] is None:
                    e["owned_at"] = row["owned_at"]
                if kafka:
                    _kafka_goes_on(e, row)
                if row["has_episodes"]:
                    del open_episode[group]
                    e["_join_next"] = True  # the next episode may coalesce with it
        elif kind == "episode":
            row["owned_at"] = _owned_at(row)
            prev = latest.get(group)
            start = dt.datetime.fromisoformat(row["start"])
            if (
                not kafka
                and prev is not None
                and prev.pop("_join_next", False)
                and (start - dt.datetime.fromisoformat(prev["end"])) < dt.timedelta(seconds=window)
            ):
                for key in ("joined", "left"):
                    prev[key] += row[key]
                prev["causes"] = _merged(prev.get("causes", []), row.get("causes", []))
                for key in ("queue_changes", "unowned_queue_s", "double_owned_queue_s"):
                    prev[key] += row[key]
                prev["end"] = row["end"]
                if prev["owned_at"] is None:
                    prev["owned_at"] = row["owned_at"]
                e = prev
            else:
                if prev is not None:
                    prev.pop("_join_next", None)
                e = {"group": group, **row}
                result.episodes.append(e)
            open_episode[group] = latest[group] = e
        elif kind == "flapping":
            cycle = joins.setdefault((group, row["client_id"]), [0, 0])
            cycle[0] += row["joins"]
            cycle[1] += row["leaves"]
        elif kind == "kafka_group":
            seen = per_group.get(group)
            per_group[group] = {**row, "rebalances": row["rebalances"] + (seen["rebalances"] if seen else 0)}
        elif kind == "fenced":
            result.fenced.append({"group": group, **row})
        elif kind == "id_moves":
            swaps, twice = moves.setdefault((group, row["client_id"]), ([], []))
            swaps += row["swaps"]
            twice += row["twice"]
        else:
            result.health.append({"group": group, **row})
    for e in result.episodes:
        e.pop("_join_next", None)
        owned_at = e.pop("owned_at")
        start_ms = ms(dt.datetime.fromisoformat(e["start"]))
        e["owned_again_s"] = None if owned_at is None else (owned_at - start_ms) / 1000
        e["unowned_queue_s"] = round(e["unowned_queue_s"], 3)
        e["double_owned_queue_s"] = round(e["double_owned_queue_s"], 3)
        if kafka:
            settled_at = e.pop("settled_at")
            e["rebalancing_s"] = None if settled_at is None else (settled_at - start_ms) / 1000
    result.episodes.sort(key=lambda e: (e["group"], e["start"]))
    numbers: dict[str, int] = {}
    for e in result.episodes:
        e["episode"] = numbers[e["group"]] = numbers.get(e["group"], -1) + 1
    result.flapping_clients = sorted(
        (
            {"group": g, "client_id": c, "joins": j, "leaves": lv, "cycles": min(j, lv)}
            for (g, c), (j, lv) in joins.items()
            if min(j, lv) >= min_cycles
        ),
        key=lambda f: (-f["cycles"], f["group"], f["client_id"]),
    )
    for (g, cid), (swaps, twice) in sorted(moves.items()):
        for d in duplicate_periods(swaps, twice, window=window):
            when = {k: dt.datetime.fromtimestamp(d[k] / 1000, dt.UTC).isoformat() for k in ("start", "end")}
            item = {"group": g, "client_id": cid, **d, **when, "seconds": (d["end"] - d["start"]) / 1000}
            result.duplicate_ids.append(item)
    when_dup: dict[str, list[tuple[dt.datetime, dt.datetime, str]]] = {}
    for d in result.duplicate_ids:
        span = (dt.datetime.fromisoformat(d["start"]), dt.datetime.fromisoformat(d["end"]), d["client_id"])
        when_dup.setdefault(d["group"], []).append(span)
    for e in result.episodes:  # the duplicated-id periods an episode's changes fall in
        first, last = dt.datetime.fromisoformat(e["start"]), dt.datetime.fromisoformat(e["end"])
        e["duplicated_ids"] = sorted({c for a, b, c in when_dup.get(e["group"], []) if a <= last and b >= first})
        if "causes" in e:
            shared = "shared instance id" if kafka else "duplicated id"
            e["causes"] = _merged(e["causes"], [f"{shared}: {c}" for c in e["duplicated_ids"]])
    result.health.sort(key=lambda h: (h["group"], h["topic"], h["broker_name"], h["queue_id"]))
    result.duplicate_ids.sort(key=lambda d: (d["group"], d["start"], d["client_id"]))
    counts: dict[str, int] = {}
    for e in result.episodes:
        counts[e["group"]] = counts.get(e["group"], 0) + 1
    result.groups = [{"group": g, **row, "episodes": counts.get(g, 0)} for g, row in sorted(per_group.items())]
    result.fenced.sort(key=lambda f: (f["group"], f["at"], f["instance_id"]))
    result.flapping_groups = sorted(
        ({"group": g, "episodes": n} for g, n in counts.items() if n >= min_episodes),
        key=lambda r: (-r["episodes"], r["group"]),
    )
    return result


def _owned_at(e: Mapping[str, Any]) -> int | None:
    """An episode's time (ms) when every queue was owned again."""
    if e["owned_again_s"] is None:
        return None
    return ms(dt.datetime.fromisoformat(e["start"])) + round(float(e["owned_again_s"]) * 1000)


#: the order an episode's causes are listed in (:mod:`mqbalance.history.causes`), by their kind
_CAUSE_ORDER = ("protocol upgraded", "protocol downgraded", "protocol changed", "joined", "left", "vanished",
                "fenced", "subscription changed", "broker gone", "queues added", "queues removed",
                "partitions added", "partitions removed", "strategies differ", "duplicated id", "shared instance id",
                *UNSEEN, "unknown")  # fmt: skip


def _kafka_goes_on(e: dict[str, Any], row: Mapping[str, Any]) -> None:
    """A Kafka episode open at a span's end goes on with the next span's prefix: its generation
    increments, states, member changes, causes and the time it settled."""
    e["rebalances"] += row["rebalances"]
    if row["generation_to"] is not None:
        e["generation_to"] = row["generation_to"]
    for state in row["states"]:
        if not e["states"] or e["states"][-1] != state:
            e["states"].append(state)
    e["joined"] += row["joined"]
    e["left"] += row["left"]
    if row["joined"] or row["left"] or row["rebalances"] or row["causes"] != ["unknown"]:
        e["causes"] = _merged(e["causes"], row["causes"])
    if e["settled_at"] is None:
        e["settled_at"] = row["settled_at"]
    if row["last"] is not None:
        last = dt.datetime.fromtimestamp(row["last"] / 1000, dt.UTC)
        e["end"] = max(dt.datetime.fromisoformat(e["end"]), last).isoformat()


def _merged(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """Two pieces of an episode's causes as one list, each once, in kind order (the same whichever
    spans cut the episode), ``unknown`` only when nothing else shows."""
    out = sorted(set(first) | set(second), key=lambda c: (_kind(c), c))
    if any(_CAUSE_ORDER[_kind(c)] not in (*UNSEEN, *_ADDED, "unknown") for c in out):
        out = [c for c in out if _CAUSE_ORDER[_kind(c)] not in UNSEEN]  # another piece saw the change
    return [c for c in out if c != "unknown"] or out


#: causes added to an episode from periods, not from its own changes
_ADDED = ("duplicated id", "shared instance id")


def _kind(cause: str) -> int:
    return next(i for i, k in enumerate(_CAUSE_ORDER) if cause.startswith(k))
