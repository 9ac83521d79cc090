"""The rebalance episodes of one group over six hours (what ``mqbalance history`` runs per group in an
executor): ``episodes`` against a plain-Python reference that replays the same events the obvious
way, in the same run, on the same prebuilt rows, giving the same episodes (checked).

Ours sweeps the ownership timeline once per episode, keeping counts of the queues owned by nobody
and by two processes as each change arrives. The reference rebuilds each episode's state from the
first event and recounts every queue after each change (what one writes first: the state as a dict,
``sum`` over it). Six hours at 10 s ticks of one group of 800 queues with a membership change every
~3 minutes (each moving a quarter of the queues through "nobody" and back); as a plain test, an
hour.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from mqbalance.history import job
from mqbalance.history.analysis import (
    episodes,
    episodes_on_timeline,
    flapping,
    health,
    id_moves,
    integrate,
    ms,
    owner_timeline,
)
from mqbalance.history.causes import causes, changes, held_at, members_at

T0 = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)


def day(hours: float, queues: int = 800, seed: int = 23) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(members, ownership)`` rows of one group: a checkpoint, then changes."""
    rng = random.Random(seed)
    qs = [("T", f"b{q % 2}", q // 2) for q in range(queues)]
    members = [{"ts": T0, "event": "checkpoint", "client_id": "c0", "client_addr": "a0"}]
    ownership = [
        {"ts": T0, "topic": t, "broker_name": b, "queue_id": i, "processes": 1, "owner": "c0"} for t, b, i in qs
    ]
    s = 0
    while s < hours * 3600:
        s += rng.randrange(60, 300, 10)
        cid = f"c{rng.randrange(8)}"
        members.append({"ts": T0 + dt.timedelta(seconds=s), "event": rng.choice(["join", "leave"]),
                        "client_id": cid, "client_addr": f"a{cid}"})  # fmt: skip
        moved = rng.sample(qs, queues // 4)
        for t, b, i in moved:  # nobody for one or two ticks, then the new owner (sometimes two for a tick)
            ownership.append({"ts": T0 + dt.timedelta(seconds=s), "topic": t, "broker_name": b, "queue_id": i,
                              "processes": 0, "owner": None})  # fmt: skip
            n = 2 if rng.random() < 0.05 else 1
            later = T0 + dt.timedelta(seconds=s + rng.choice([10, 20]))
            ownership.append({"ts": later, "topic": t, "broker_name": b, "queue_id": i, "processes": n, "owner": cid})
    return members, ownership


def reference_episodes(
    members: Sequence[Mapping[str, Any]], ownership: Sequence[Mapping[str, Any]], window: float
) -> list[tuple[Any, ...]]:
    """The same episodes, replayed the obvious way."""
    changes = sorted((r for r in members if r["event"] in ("join", "leave")), key=lambda r: ms(r["ts"]))
    events = sorted(ownership, key=lambda r: ms(r["ts"]))
    end = max([ms(r["ts"]) for r in changes] + [ms(r["ts"]) for r in events])
    groups: list[list[Mapping[str, Any]]] = []
    for r in changes:
        if groups and ms(r["ts"]) - ms(groups[-1][-1]["ts"]) < window * 1000:
            groups[-1].append(r)
        else:
            groups.append([r])
    out = []
    for k, rows in enumerate(groups):
        start = ms(rows[0]["ts"])
        until = ms(groups[k + 1][0]["ts"]) if k + 1 < len(groups) else max(end, ms(rows[-1]["ts"]))
        state: dict[tuple[str, str, int], int] = {}
        for r in events:
            if ms(r["ts"]) <= start:
                state[(r["topic"], r["broker_name"], r["queue_id"])] = r["processes"]
        t, idle, twice, owned_at = start, 0.0, 0.0, None
        if all(n > 0 for n in state.values()):
            owned_at = start
        for r in events:
            at = ms(r["ts"])
            if not start < at < until:
                continue
            idle += sum(1 for n in state.values() if n == 0) * (at - t) / 1000
            twice += sum(1 for n in state.values() if n >= 2) * (at - t) / 1000
            t = at
            state[(r["topic"], r["broker_name"], r["queue_id"])] = r["processes"]
            if owned_at is None and all(n > 0 for n in state.values()):
                owned_at = at
        idle += sum(1 for n in state.values() if n == 0) * (until - t) / 1000
        twice += sum(1 for n in state.values() if n >= 2) * (until - t) / 1000
        again = None if owned_at is None else (owned_at - start) / 1000
        out.append((k, again, round(idle, 3), round(twice, 3)))
    return out


def test_episodes_against_replaying_the_state(compare, full_size: bool) -> None:
    members, ownership = day(6 if full_size else 1)
    window = 60.0

    def ours() -> list[tuple[Any, ...]]:
        return [
            (e["episode"], e["owned_again_s"], e["unowned_queue_s"], e["double_owned_queue_s"])
            for e in episodes(members, ownership, window=window)
        ]

    def check(got: Any, expected: Any) -> None:
        assert got == expected and len(got) > 10 and any(e[2] > 0 for e in got) and any(e[3] > 0 for e in got)

    compare(
        ours,
        lambda: reference_episodes(members, ownership, window),
        check=check,
        rounds=3 if full_size else 1,
        label="replaying the state",
    )


def _at(t: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(t / 1000, dt.UTC)


def _span_from_rows(
    table: Any, since: int, until: int, readings: Sequence[int], window: float
) -> list[tuple[str, str, str]]:
    """A final span's rows the way the executors built them before issue 36: every event as a dict
    of every column (times as datetimes), the public functions over those."""
    rows = table.to_pylist()
    members = [r for r in rows if r["table"] == "members"]
    ownership = [r for r in rows if r["table"] == "ownership"]
    offsets = [r for r in rows if r["table"] == "offsets"]
    groups = [r for r in rows if r["table"] == "groups"]
    timeline = owner_timeline(ownership)

    def explain(rs: Sequence[Mapping[str, Any]]) -> list[str]:
        last = ms(rs[-1]["ts"])
        return causes(rs, members_at(members, last), held_at(ownership, last))

    as_ms = [{**r, "ts": ms(r["ts"])} for r in changes(members, groups, ownership, since=since)]
    found = [
        {**e, "start": _at(e["start"]), "end": _at(e["end"])}
        for e in episodes_on_timeline(as_ms, timeline, window=window, end=until, explain=explain)
    ]
    first = ms(found[0]["start"]) if found else until
    idle_s, dup_s, owned_at = integrate(timeline, since, first)
    changed = sum(1 for t, _q, _n in timeline if since <= t < first)
    prefix = {"unowned_queue_s": idle_s, "double_owned_queue_s": dup_s, "owned_at": owned_at,
              "queue_changes": changed, "has_episodes": bool(found)}  # fmt: skip
    out: list[tuple[str, Any]] = [("prefix", prefix), *(("episode", e) for e in found)]
    out += [("flapping", f) for f in flapping(members, min_cycles=0, since=since) if f["joins"] or f["leaves"]]
    for cid, (swaps, twice) in id_moves(members, end=until, since=since).items():
        out.append(("id_moves", {"client_id": cid, "swaps": swaps, "twice": twice}))
    out += [("health", h) for h in health(offsets, readings, {q: n for _t, q, n in timeline})]
    return [("g", k, json.dumps(v, default=lambda t: t.isoformat())) for k, v in out]


def test_a_span_from_columns_gives_what_the_rows_gave() -> None:
    """The executors' columnar reading of a group's events (``job._analyse_span``) against the
    dict-per-row reading it replaced, on one generated group with offsets (as Spark hands them:
    microsecond times in the session's zone)."""
    members, ownership = day(1, queues=40)
    events: list[dict[str, Any]] = [{"table": "members", "group": "g", **r} for r in members]
    events += [{"table": "ownership", "group": "g", "event": "change", **r} for r in ownership]
    readings = [ms(T0) + 60_000 * k for k in range(61)]
    for k, at in enumerate(readings):
        events += [
            {"table": "offsets", "group": "g", "event": "change", "ts": at, "topic": "T", "broker_name": f"b{q % 2}",
             "queue_id": q // 2, "committed": k * (q % 3), "max_offset": k * 2 + (q % 5 == 0) * 50}
            for q in range(40) if (k + q) % 4
        ]  # fmt: skip
    for e in events:
        e["ts"] = e["ts"] if isinstance(e["ts"], dt.datetime) else dt.datetime.fromtimestamp(e["ts"] / 1000, dt.UTC)
    types = {**job._COLUMNS, "ts": pa.timestamp("us", tz="UTC")}
    table = pa.Table.from_pylist(events, schema=pa.schema(list(types.items())))
    since, until = ms(T0) + 600_000, ms(T0) + 3_600_000
    got = job._analyse_span(table, since, until, True, readings[-10:], 60.0)
    expected = _span_from_rows(table, since, until, readings[-10:], 60.0)
    assert [tuple(r.values()) for r in got.to_pylist()] == expected
    assert {k for _g, k, _r in expected} >= {"prefix", "episode", "flapping", "health"}
