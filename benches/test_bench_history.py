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
import random
from collections.abc import Mapping, Sequence
from typing import Any

from mqbalance.history.analysis import episodes, ms

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
