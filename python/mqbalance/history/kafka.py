"""What a Kafka group's history means: its rebalances, counted by the broker's own numbers — the
classic protocol's generation id, the consumer protocol's group epoch (KIP-848) — as episodes with
who joined and left, how long the group spent rebalancing, its static members replaced (fenced)
or shared, from the events of one group (:mod:`mqbalance.history.schema`, ``cluster_kind``
``"kafka"``). Pure functions over plain rows, as :mod:`mqbalance.history.analysis`: the same code
runs in process and in Spark's executors (:mod:`mqbalance.history.job`).

**Rebalances.** The group's rebalance count is the sum of its generation (epoch) increments
between consecutive observations: exact, generations never observed included (a jump from 4 to 7
is 3). A group that *appears* counts from 0 (a new group's first generations are rebalances too; a
classic group's generation is unknown — null — until the coordinator records its first one);
one already there when the data starts counts from its first generation seen. A generation that
goes down (the group deleted and made again between two ticks) counts nothing and is the new
base; where the protocol changed, it counts from 0 (see *Protocol changes*).

**Episodes.** A classic rebalance goes ``PreparingRebalance`` (old generation) →
``CompletingRebalance`` → ``Stable`` (the watcher reads a classic group's generation from the
coordinator's records, written as it becomes Stable, so the new generation shows at the end or a
tick later); a consumer-protocol one bumps the group epoch at once and goes ``Assigning`` /
``Reconciling`` → ``Stable``. An episode starts when the group enters ``PreparingRebalance`` (or
``CompletingRebalance`` from a settled state, or ``PreparingRebalance`` again from
``CompletingRebalance``: the next rebalance began, the Stable between fell between two ticks) and
waits for its generation increase, or at an
increase no episode waits for. A waiting episode
that settles is given one increment then (a classic rebalance that reaches Stable or Empty made a
generation), which the increase read later pays back: a rebalance that starts before the
record of the last one is read is an episode of its own. Each decision reads the
observation before and whether an episode waits; where a span's rows start (its last checkpoint)
a classic group in ``PreparingRebalance`` or ``CompletingRebalance`` is taken as waiting — so a
history read a span at a time gives the episodes it gives whole, but for a checkpoint taken
between a rebalance's new generation and its Stable. An episode lasts until the next one; it
has its ``rebalances`` (the increments in it), the generations before and after, the states seen
in it (as the broker names them: ``Assigning`` and ``Reconciling`` are states, not "unknown"), the
time until the group was settled again (``Stable``, ``Empty`` or ``Dead``: ``rebalancing_s``,
``None`` when not before the next episode), who joined and left (client id, host, member id,
instance id), the partition owner changes and the time until every partition was owned again, as
for RocketMQ (:func:`mqbalance.history.analysis.episodes_on_timeline`).

**Protocol changes.** Kafka converts a running classic group to the consumer protocol when a
member using that protocol joins it (KIP-848's online upgrade, ``group.consumer.migration.policy``
``upgrade`` or ``bidirectional``, the default since Kafka 4.0), and back when the last such member
leaves a group of classic members: the group keeps its members (their member ids) and its number
— the group epoch continues from the classic generation (and the other way), so the increments
count across the change as before it. The episode in which the group's type changes has the cause
``protocol upgraded: classic -> consumer`` (or ``downgraded``; with the assignor when it changed,
and no ``subscription changed: assignor …`` for that). An *empty* group is not converted but made
anew on the other protocol: its number starts again, and counts from 0 (as a group that appears).

**Members.** A member is its member id. Joins and leaves are the differences between the member
lists of consecutive ticks (checkpoint ticks included). A static member (``group.instance.id``)
whose member id is replaced within one tick — the old id leaves and a new one with the same
instance id joins — was restarted within its session timeout or its instance id taken by another
process: the broker fenced the old member id. That is a *replacement* (reported with whether the
generation moved at that tick), never a join and leave; it is a cause of an episode only when the
generation moved with it. An instance id that moves between member ids at least
:data:`~mqbalance.history.analysis.MIN_SWAPS` times, each less than the window after the last, or
is listed under two member ids at once, is *shared* (two processes with one instance id fencing
each other: :func:`~mqbalance.history.analysis.duplicate_periods`, as duplicated RocketMQ client
ids).

>>> rows = [{"ts": t, "event": e, "state": s, "generation": g}
...         for t, e, s, g in [(0, "checkpoint", "Stable", 4), (10, "state", "PreparingRebalance", 4),
...                            (12, "state", "CompletingRebalance", 5), (13, "state", "Stable", 5),
...                            (50, "state", "Stable", 8)]]
>>> [(s["ts"], s["inc"], s["starts"], s["settles"]) for s in generation_steps(rows) if s["starts"] or s["raw"]]
[(10, 0, True, False), (12, 1, False, False), (50, 3, True, True)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import groupby
from typing import Any

from mqbalance.history.analysis import OwnershipSweep, flapping, health, id_moves, ms, owner_timeline
from mqbalance.history.causes import UNSEEN, kafka_causes, member_name, queue_changes

__all__ = [
    "SETTLED",
    "STALL_S",
    "analyse_kafka_group",
    "generation_steps",
    "member_changes",
    "unseen_causes",
    "vanished",
]

#: the states (lower case) of a group not rebalancing
SETTLED = frozenset({"stable", "empty", "dead"})
#: the classic state in which the group still has its old generation
_PREPARING = "preparingrebalance"
#: the classic states of a rebalance whose new generation may not be known yet (the watcher reads
#: classic generations from the coordinator's records, written as the group becomes Stable)
_REBALANCING = frozenset({_PREPARING, "completingrebalance"})
#: a member removed while its partitions lagged and no commit on them moved for this long before
#: (at two offsets readings or more) vanished: its session expired (seconds; shorter than any
#: session timeout — the broker's minimum is 6 s by default — and than a live consumer's pause
#: between commits is long, as it commits what it consumes and on a graceful close)
STALL_S = 4.0


def _state(row: Mapping[str, Any] | None) -> str:
    return str((row or {}).get("state") or "").lower()


def _ticks(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per tick (the rows of one tick carry the same current values; order-free)."""
    out = []
    for t, batch in groupby(sorted(rows, key=lambda r: ms(r["ts"])), key=lambda r: ms(r["ts"])):
        rows_at = sorted(batch, key=lambda r: str(r["event"]))
        events = {r["event"] for r in rows_at}
        last = next((r for r in rows_at if r["event"] != "checkpoint"), rows_at[-1])
        out.append({**last, "ts": t, "events": events})
    return out


def generation_steps(groups: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per tick of a group's ``groups`` rows, in time order: ``ts`` (ms), ``state``, ``generation``
    (as known, ``known_generation``, and with the increments given ahead of the record:
    ``generation``), ``raw`` (the generation increase since the tick before), ``inc`` (the
    increase this tick's episode counts: see the module docs), ``starts`` (an
    episode starts here), ``to_previous`` (its increase belongs to the episode before, which was
    waiting for it) and ``settles`` (the group is settled again here after rebalancing)."""
    out: list[dict[str, Any]] = []
    prev: dict[str, Any] | None = None
    awaiting = False  # an episode started by PreparingRebalance waits for its generation
    debt = 0  # increments already given to settled episodes whose generation was not read yet
    converted = False  # the protocol changed, and no generation of the new one was seen yet
    for r in _ticks(groups):
        gen = r.get("generation")
        appear = "appear" in r["events"]
        before = prev.get("generation") if prev is not None else None
        kind, kind_before = r.get("group_type"), (prev or {}).get("group_type")
        converted = converted or (kind is not None and kind_before is not None and kind != kind_before)
        if appear:  # a new group counts from 0; one seen again from where it was
            base = before if before is not None and (gen is None or gen >= before) else 0
        else:
            base = before if prev is not None else gen
        if converted and gen is not None and gen != base:
            converted = False  # the new protocol's first number: from the old one, or anew
            if not appear and base is not None and gen < base:
                base = 0  # a group made anew on the other protocol (an empty one converted): from 0
        raw = max(0, int(gen) - int(base)) if gen is not None and base is not None else 0
        if gen is None:  # not known yet (a classic group before its first record): the base carries
            gen = base
        state = _state(r)
        fresh = prev is None or "disappear" in prev["events"]
        if fresh:
            awaiting, debt = False, 0
        inc, debt = max(0, raw - debt), max(0, debt - raw)
        # a rebalance seen from its start, or first in CompletingRebalance (its PreparingRebalance
        # fell between two ticks)
        # or back in PreparingRebalance from CompletingRebalance: the rebalance before made its
        # generation (the broker creates it on entering CompletingRebalance) and a member's JoinGroup
        # or leave began the next one — its Stable, if any, fell between two ticks
        # (or still in it with a newer generation: the one it waited for was made meanwhile)
        back = (
            not fresh
            and state == _PREPARING
            and (_state(prev) == "completingrebalance" or (_state(prev) == _PREPARING and raw > 0))
        )
        entering = state in _REBALANCING and (appear or (not fresh and _state(prev) not in _REBALANCING) or back)
        starts = to_previous = False
        if prev is None and not appear:  # where the rows start (a checkpoint): the state then
            awaiting = state in _REBALANCING
        elif inc > 0 and awaiting:
            to_previous = starts = entering  # a new rebalance begins as the last one's generation comes
            awaiting = entering
        elif inc > 0:
            starts, awaiting = True, state == _PREPARING
        elif entering and not awaiting:
            starts = awaiting = True
        elif back:  # the waiting rebalance's generation, not read yet: given now, paid back when read
            inc, debt, to_previous, starts = 1, debt + 1, True, True
        settles = state in SETTLED and (inc > 0 or starts or (prev is not None and _state(prev) not in SETTLED))
        if settles and awaiting and not starts:
            # a classic rebalance that settled has a new generation (at least one): given now, the
            # coordinator's record that says so (read a tick later) pays it back
            inc, debt, awaiting = inc + 1, debt + 1, False
        step = {
            "ts": r["ts"],
            "state": r.get("state"),
            "generation": None if gen is None else int(gen) + debt,
            "known_generation": gen,
            "group_type": r.get("group_type"),
            "assignment_epoch": r.get("assignment_epoch"),
            "subscriptions": sorted(r.get("subscriptions") or []),
            "strategy": r.get("strategy"),
            "events": sorted(r["events"]),
            "raw": raw,
            "inc": inc,
            "changed": prev is not None and (inc > 0 or starts or state != _state(prev)),
            "starts": starts,
            "to_previous": to_previous,
            "settles": settles,
        }
        out.append(step)
        prev = {**r, "generation": gen}
    return out


def _member(r: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "member_id": r["member_id"],
        "client_id": r["client_id"],
        "client_addr": r["client_addr"],
        "instance_id": r.get("instance_id"),
    }


def member_changes(members: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A group's member joins and leaves (``ts``, ``event``, the member's ids) as differences of
    its member lists from tick to tick (a checkpoint replaces the list; the first one, where the
    rows start, is the list then), and its static
    replacements (``ts``, ``instance_id``, the old and the new member): see the module docs."""
    state: dict[str, dict[str, Any]] | None = None
    changes: list[dict[str, Any]] = []
    replaced: list[dict[str, Any]] = []
    for t, batch in groupby(sorted(members, key=lambda r: ms(r["ts"])), key=lambda r: ms(r["ts"])):
        rows = list(batch)
        if state is None and any(r["event"] == "checkpoint" for r in rows):
            state = {}  # the first checkpoint: the list then, no change
            first = True
        else:
            first = False
        now = {} if any(r["event"] == "checkpoint" for r in rows) else dict(state or {})
        for r in rows:
            if r.get("member_id") is None:
                continue
            if r["event"] == "leave":
                now.pop(r["member_id"], None)
            else:
                now[r["member_id"]] = _member(r)
        if not first:
            state = state or {}
            left = [state[m] for m in sorted(state.keys() - now.keys())]
            joined = [now[m] for m in sorted(now.keys() - state.keys())]
            for old in list(left):
                new = next((j for j in joined if old["instance_id"] and j["instance_id"] == old["instance_id"]), None)
                if new is not None:
                    left.remove(old)
                    joined.remove(new)
                    replaced.append({"ts": t, "instance_id": old["instance_id"], "old": old, "new": new})
            changes += [{"ts": t, "event": "join", **m} for m in joined]
            changes += [{"ts": t, "event": "leave", **m} for m in left]
        state = now
    return changes, replaced


def _first_list(members: Iterable[Mapping[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The members of a group's first checkpoint among its rows (none when its rows start with
    changes), with its time."""
    rows = sorted(members, key=lambda r: ms(r["ts"]))
    if not rows or rows[0]["event"] != "checkpoint":
        return []
    t = ms(rows[0]["ts"])
    return [(t, _member(r)) for r in rows if ms(r["ts"]) == t and r.get("member_id") is not None]


def _owner_before(ownership: Sequence[Mapping[str, Any]], t: int) -> dict[tuple[str, str, int], str | None]:
    owner: dict[tuple[str, str, int], str | None] = {}
    for r in ownership:
        if ms(r["ts"]) >= t:
            break
        owner[(r["topic"], r["broker_name"], int(r["queue_id"]))] = None if r["event"] == "remove" else r["owner"]
    return owner


def vanished(
    member_id: str,
    t: int,
    ownership: Sequence[Mapping[str, Any]],
    offsets: Sequence[Mapping[str, Any]],
    readings: Sequence[int],
) -> str | None:
    """Why member ``member_id``, removed at ``t`` (ms), vanished rather than left, or ``None`` when
    the evidence cannot tell: it held partitions that lagged and whose committed offsets did not
    move at any offsets reading (``readings``, ms) over the last :data:`STALL_S` before its
    removal, at two readings or more — a consumer that is alive commits what it consumes and
    commits on a graceful close; one killed stops, and the broker removes it when its session
    expires (seconds later: 45 s by default). ``ownership`` and ``offsets`` in time order.

    >>> own = [{"ts": 0, "event": "checkpoint", "topic": "t", "broker_name": "", "queue_id": 0, "owner": "m"}]
    >>> offs = [{"ts": 0, "topic": "t", "broker_name": "", "queue_id": 0, "committed": 5, "max_offset": 9}]
    >>> vanished("m", 20_000, own, offs, [10_000, 14_000, 16_000, 18_000])
    'no commit at 2 offsets readings over 4 s on its lagging partitions'
    """
    held = {q for q, o in _owner_before(ownership, t).items() if o == member_id}
    within = [r for r in readings if t - STALL_S * 1000 <= r < t]
    if not held or len(within) < 2:
        return None
    last: dict[tuple[str, str, int], tuple[int | None, int | None]] = {}
    moved: dict[tuple[str, str, int], int] = {}
    for r in offsets:
        at = ms(r["ts"])
        if at >= t:
            break
        q = (r["topic"], r["broker_name"], int(r["queue_id"]))
        if q in held:
            if q in last and last[q][0] != r["committed"]:
                moved[q] = at
            last[q] = (r["committed"], r["max_offset"])
    lagging = [q for q in held if q in last and _lags(last[q])]
    if not lagging or max([moved.get(q, 0) for q in held], default=0) >= within[0]:
        return None
    return f"no commit at {len(within)} offsets readings over {(t - within[0]) / 1000:g} s on its lagging partitions"


def _lags(values: tuple[int | None, int | None]) -> bool:
    committed, end = values
    return committed is not None and end is not None and end > committed


def unseen_causes(
    a: int,
    b: int,
    previous: int,
    replaced: Sequence[Mapping[str, Any]],
    inc_at: Mapping[int, int],
    changes: Sequence[Mapping[str, Any]],
    ownership: Sequence[Mapping[str, Any]],
    members: Sequence[Mapping[str, Any]],
) -> list[str]:
    """The causes of an episode ``[a, b)`` whose generation advanced with no change of members,
    subscriptions, partitions or protocol seen in it — a rebalance begun and settled between two
    ticks by a member's JoinGroup with the membership unchanged (a member rejoining after its
    metadata changed, a leader rejoining, a static member's new id rejoining), whose reason only
    the broker logs: ``generation advanced with no membership change seen between ticks``, then
    what the watcher did see, never a guess at the reason:

    * ``static member replaced S s before: instance I, member A -> MEMBER`` — a static
      replacement since the group's row before ``a`` (``previous``; a checkpoint's included, so
      a history read a span at a time says the same) that moved no generation in its own tick,
      with no member change between it and ``a``;
    * ``assignment changed: MEMBER; …`` — the members whose partitions changed owner in the
      episode (old and new owners).

    >>> m = {"ts": 0, "event": "checkpoint", "member_id": "c1-0", "client_id": "c1", "client_addr": "/h"}
    >>> own = [{"ts": 12, "event": "change", "topic": "t", "broker_name": "", "queue_id": 0, "owner": "c1-0"}]
    >>> unseen_causes(10, 20, 0, [], {10: 1}, [], own, [m])
    ['generation advanced with no membership change seen between ticks', 'assignment changed: c1 (/h, member c1-0)']
    """
    out = [UNSEEN[0]]
    out += [
        f"static member replaced {(a - r['ts']) / 1000:g} s before: instance {r['instance_id']}, member"
        f" {r['old']['member_id']} -> {member_name(r['new'])}"
        for r in replaced
        if previous <= r["ts"] < a and inc_at.get(r["ts"], 0) == 0 and not any(r["ts"] < c["ts"] < a for c in changes)
    ]
    owner = _owner_before(ownership, a)
    moved: set[str] = set()
    for r in ownership:
        t = ms(r["ts"])
        if t < a or t >= b:
            continue
        q = (r["topic"], r["broker_name"], int(r["queue_id"]))
        now = None if r["event"] == "remove" else r["owner"]
        if owner.get(q) != now:
            moved.update(o for o in (owner.get(q), now) if o)
        owner[q] = now
    known = {r["member_id"]: _member(r) for r in members if r.get("member_id")}
    if moved:
        out.append(
            "assignment changed: " + "; ".join(member_name(known[m]) if m in known else m for m in sorted(moved))
        )
    return out


def _who(m: Mapping[str, Any]) -> list[Any]:
    """A member as an episode lists it: client id, host, member id, instance id."""
    return [m["client_id"], m["client_addr"], m["member_id"], m.get("instance_id")]


def analyse_kafka_group(
    groups: Sequence[Mapping[str, Any]],
    members: Sequence[Mapping[str, Any]],
    ownership: Sequence[Mapping[str, Any]],
    offsets: Sequence[Mapping[str, Any]],
    *,
    since: int,
    until: int,
    final: bool,
    readings: Sequence[int],
    offset_readings: Sequence[int],
) -> list[tuple[str, dict[str, Any]]]:
    """One Kafka group over ``[since, until)`` ms, as the rows :func:`mqbalance.history.spans.combine_spans`
    puts together: a ``prefix`` (what the previous span's last episode goes on with until this
    span's first), the ``episode`` s starting in the span, ``flapping`` and ``id_moves`` (instance
    ids over member ids), ``fenced`` (static replacements), ``kafka_group`` (rebalances counted,
    the last state) and, when ``final``, ``health`` over the last ``readings``.
    ``offset_readings``: the times offsets were read in the span (for :func:`vanished`)."""
    ownership = sorted(ownership, key=lambda r: ms(r["ts"]))
    offsets = sorted(offsets, key=lambda r: ms(r["ts"]))
    steps = generation_steps(groups)
    changes, replaced = member_changes(members)
    timeline = owner_timeline(ownership)
    times = [t for t, _q, _n in timeline]
    last = max([ms(r["ts"]) for r in (*groups, *members)] + times + [until], default=until)
    starts = [s["ts"] for s in steps if s["starts"] and s["ts"] >= since]
    bounds = [since, *starts, last + 1 if final else until]
    inc_at = {s["ts"]: s["inc"] for s in steps}
    step_at = {s["ts"]: s for s in steps}
    sweep = OwnershipSweep(timeline)
    added = queue_changes(ownership, since=since)
    # subscriptions and assignor compared between Stable observations only: a classic group's
    # description carries no member metadata while it rebalances, and an Empty one has no members;
    # across a change of protocol the assignor changes with it (the protocol's cause says so)
    sub_changes = []
    seen: tuple[list[str], Any, Any] | None = None
    for s in steps:
        if _state(s) != "stable":
            continue
        now = (s["subscriptions"], s["strategy"], s["group_type"])
        if seen is not None and s["ts"] >= since:
            if now[2] != seen[2] and now[0] != seen[0]:
                sub_changes.append({"ts": s["ts"], "before": (seen[0], None), "after": (now[0], None)})
            elif now[2] == seen[2] and now[:2] != seen[:2]:
                sub_changes.append({"ts": s["ts"], "before": seen[:2], "after": now[:2]})
        seen = now
    protocols = []  # the group converted between the classic and the consumer protocol (KIP-848)
    kind: tuple[Any, Any] | None = None
    for s in steps:
        if s["group_type"] is None:
            continue
        if kind is not None and s["group_type"] != kind[0] and s["ts"] >= since:
            protocols.append({"ts": s["ts"], "before": kind, "after": (s["group_type"], s["strategy"])})
        kind = (s["group_type"], s["strategy"])
    out: list[tuple[str, dict[str, Any]]] = []
    for k in range(len(bounds) - 1):
        a, b = bounds[k], bounds[k + 1]
        inside = [s for s in steps if a <= s["ts"] < b]
        nxt = step_at.get(b)
        handed = nxt is not None and nxt["to_previous"]  # the next start's increase is this episode's
        counted = [s for s in inside if not (s["ts"] == a and s["to_previous"])]
        if nxt is not None and handed:
            counted.append(nxt)
        joined = [c for c in changes if a <= c["ts"] < b and c["event"] == "join"]
        left = [c for c in changes if a <= c["ts"] < b and c["event"] == "leave"]
        swaps = [r for r in replaced if a <= r["ts"] < b and inc_at.get(r["ts"], 0) > 0]
        counted_inc = sum(s["inc"] for s in counted)
        why = kafka_causes(
            joined=joined,
            left=[
                {**m, "vanished": vanished(m["member_id"], m["ts"], ownership, offsets, offset_readings)} for m in left
            ],  # fmt: skip
            replaced=swaps,
            subscriptions=[c for c in sub_changes if a <= c["ts"] < b],
            partitions=[c for c in added if a <= c["ts"] < b],
            protocols=[c for c in protocols if a <= c["ts"] < b],
        )
        if why == ["unknown"] and k > 0 and counted_inc > 0:
            row_before = max((s["ts"] for s in steps if s["ts"] < a), default=a)  # the group's row before
            why = unseen_causes(a, b, row_before, replaced, inc_at, changes, ownership, members)
        idle_s, dup_s, owned_at = sweep.integrate(a, b)
        moments = [s["ts"] for s in inside if s["changed"]] + [c["ts"] for c in joined + left]
        settled = next((s["ts"] for s in inside if s["settles"]), None)
        states: list[str] = []
        for s in inside:
            if s["state"] is not None and (not states or states[-1] != s["state"]):
                states.append(s["state"])
        row: dict[str, Any] = {
            "rebalances": sum(s["inc"] for s in counted),
            "generation_to": counted[-1]["generation"] if counted else inside[-1]["generation"] if inside else None,
            "states": states,
            "settled_at": settled,
            "joined": [_who(m) for m in joined],
            "left": [_who(m) for m in left],
            "causes": why,
            "unowned_queue_s": idle_s,
            "double_owned_queue_s": dup_s,
            "owned_at": owned_at,
            "queue_changes": sum(1 for t in times if a <= t < b),
            "last": max(moments, default=None),
        }
        if k == 0:
            out.append(("prefix", {**row, "has_episodes": len(bounds) > 2}))
            continue
        before = [s for s in steps if s["ts"] < a]
        start = next(s for s in steps if s["ts"] == a)
        row["owned_again_s"] = None if owned_at is None else (owned_at - a) / 1000
        del row["owned_at"]
        out.append(
            (
                "episode",
                {
                    **row,
                    "start": a,
                    "end": max(moments, default=a),
                    "group_type": start["group_type"],
                    "generation_from": (
                        start["generation"]
                        if start["to_previous"]
                        else before[-1]["generation"]
                        if before
                        else (start["generation"] or 0) - start["inc"]
                    ),
                },
            )
        )
    pairs = [{**c, "client_addr": c["member_id"]} for c in changes]  # a client id's connections: its members
    out += [("flapping", f) for f in flapping(pairs, min_cycles=0, since=since) if f["joins"] or f["leaves"]]
    # instance ids over member ids, from the member lists' differences (a member that left at a
    # checkpoint tick is gone there) and the first list, replacements as a leave and a join
    listed = [{**m, "ts": t, "event": "checkpoint"} for t, m in _first_list(members)]
    listed += changes + [
        {**r[side], "ts": r["ts"], "event": event}
        for r in replaced
        for side, event in (("old", "leave"), ("new", "join"))
    ]
    instances = [
        {"ts": r["ts"], "event": r["event"], "client_id": r["instance_id"], "client_addr": r["member_id"]}
        for r in listed
        if r.get("instance_id")
    ]
    for iid, (moves, twice) in id_moves(instances, end=until, since=since).items():
        out.append(("id_moves", {"client_id": iid, "swaps": moves, "twice": twice}))
    for r in replaced:
        if r["ts"] >= since:
            out.append(
                (
                    "fenced",
                    {
                        "at": r["ts"],
                        "instance_id": r["instance_id"],
                        "member_id": r["old"]["member_id"],
                        "client_id": r["old"]["client_id"],
                        "client_addr": r["old"]["client_addr"],
                        "by_member_id": r["new"]["member_id"],
                        "by_client_id": r["new"]["client_id"],
                        "by_client_addr": r["new"]["client_addr"],
                        "rebalances": inc_at.get(r["ts"], 0),
                    },
                )
            )
    end = steps[-1] if steps else {}
    out.append(
        (
            "kafka_group",
            {
                "rebalances": sum(s["raw"] for s in steps if s["ts"] >= since),
                "group_type": end.get("group_type"),
                "state": end.get("state"),
                "generation": end.get("known_generation"),
                "assignment_epoch": end.get("assignment_epoch"),
            },
        )
    )
    if final:
        owners: dict[tuple[str, str, int], int] = {q: n for _t, q, n in timeline}
        out += [("health", h) for h in health(offsets, readings, owners)]
    return out
