"""Why a group rebalanced: the changes in its events that start an episode, and the causes an
episode states from them (:mod:`mqbalance.history.analysis` groups the changes into episodes).

A RocketMQ client rebalances when the group's client ids change, when the queues of its
subscribed topics change, or every 20 s regardless; the watcher sees the first two. The changes
that start or extend an episode, from a group's rows (:mod:`mqbalance.history.schema`):

* ``join`` / ``leave`` of a connection (``members``);
* ``subscription``: the group's subscriptions or strategy changed (``groups``);
* ``queue_added`` / ``queue_removed``: a queue became or stopped being the group's (``ownership``:
  a ``change`` row for a queue not held before, a ``remove`` row) — a topic's queue count
  changed, a topic was created or deleted, or a broker went away.

Retry and dead-letter topics (``%RETRY%``, ``%DLQ%``: :func:`internal`) are left out of both.

The causes of an episode, in this order, each naming what the evidence shows:

* ``joined: ID (ADDR)`` / ``left: ID (ADDR)`` — a leave is graceful or a closed connection: the
  broker drops a client that unregisters and one whose socket closes at once, and one that went
  silent 120 s after its last heartbeat; its connection list says nothing of which;
* ``subscription changed: TOPICS`` (the topics added and removed, or the strategy);
* ``broker gone: NAME (N queues)`` — every queue the group had on that broker was removed while it
  kept queues elsewhere; ``queues added: TOPIC on BROKER (N)`` / ``queues removed: ...`` otherwise;
* ``strategies differ: NAME (IDS); NAME (IDS)`` — the members connected after the episode's
  changes report different strategies (from their running info): their allocations disagree;
* ``duplicated id: ID`` — added when the episode falls in a duplicated-id period
  (:func:`mqbalance.history.spans.combine_spans`);
* ``unknown`` when none of these shows.

**Kafka** (:mod:`mqbalance.history.kafka`): an episode is a generation (group epoch) change and
its causes use the same kinds where they mean the same, naming members by client id, host, member
id and instance id (:func:`member_name`), from :func:`kafka_causes`:

* ``joined: MEMBER``; ``left: MEMBER`` — removed, gracefully or not: the broker's group
  description says nothing of which; ``vanished: MEMBER: EVIDENCE`` — removed after its
  partitions lagged with no commit at two offsets readings or more over the last 4 s
  (:func:`mqbalance.history.kafka.vanished`): a killed consumer whose session expired (a live
  one commits what it consumes, and on a graceful close);
* ``fenced: instance I, member A replaced by MEMBER`` — a static member's id taken by a new one
  (a restart within the session timeout, or another process with the same instance id) in the
  tick the generation moved; ``shared instance id: I`` — the episode falls in a period in which
  the instance id moved between members again and again (:mod:`mqbalance.history.spans`);
* ``protocol upgraded: classic -> consumer`` (``(assignor A -> B)`` added when the assignor
  changed with it) — the group was converted to the consumer protocol (KIP-848) while running:
  Kafka does it when a member using that protocol joins a classic group
  (``group.consumer.migration.policy`` ``upgrade`` or ``bidirectional``, the default since 4.0);
  ``protocol downgraded: consumer -> classic`` the other way (the last consumer-protocol member
  left a group of classic members);
* ``subscription changed: +T -U`` (the union of the members' topics) or ``assignor A -> B`` (not
  when the protocol changed: its assignor changes with it);
* ``partitions added: T (N)`` / ``partitions removed: T (N)`` — a topic's partition count
  changed, a topic was created or deleted;
* when none of these shows but the generation advanced (a member's JoinGroup with the membership
  unchanged, begun and settled between two ticks: a rejoin after its metadata changed, a leader's
  or a static member's rejoin — the broker logs the reason, its group description does not):
  ``generation advanced with no membership change seen between ticks``, then the evidence seen
  around it: a static replacement just before it, the members whose assignment changed
  (:func:`mqbalance.history.kafka.unseen_causes`);
* ``unknown`` otherwise.

>>> rows = [{"ts": 0, "event": "checkpoint", "topic": "T", "broker_name": "b", "queue_id": 0},
...         {"ts": 5, "event": "change", "topic": "T", "broker_name": "b", "queue_id": 1}]
>>> [(c["ts"], c["event"], c["queue"]) for c in queue_changes(rows, since=0)]
[(5, 'queue_added', ('T', 'b', 1))]
>>> causes([{"event": "join", "client_id": "c2", "client_addr": "10.0.0.2"}] + queue_changes(rows, since=0), {})
['joined: c2 (10.0.0.2)', 'queues added: T on b (1)']
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import groupby
from typing import Any

__all__ = [
    "UNSEEN",
    "causes",
    "changes",
    "held_at",
    "internal",
    "kafka_causes",
    "member_name",
    "members_at",
    "protocol_change",
    "queue_changes",
]

Queue = tuple[str, str, int]

#: the causes of a Kafka episode whose generation advanced with nothing else seen in it, by kind
#: (:func:`mqbalance.history.kafka.unseen_causes`): the first, then the evidence seen around it
UNSEEN = ("generation advanced with no membership change seen between ticks", "static member replaced",
          "assignment changed")  # fmt: skip


def _ms(ts: Any) -> int:
    return int(ts.timestamp() * 1000) if hasattr(ts, "timestamp") else int(ts)


def internal(topic: str) -> bool:
    """A group's retry or dead-letter topic: not a change of what it consumes. (A Java broker
    replaces a group's subscriptions with each member's heartbeat, and Java push consumers
    subscribe to ``%RETRY%group`` while other clients may not: in a mixed group it comes and goes
    tick after tick, and no client rebalances for it.)"""
    return topic.startswith(("%RETRY%", "%DLQ%"))


def queue_changes(ownership: Iterable[Mapping[str, Any]], *, since: int) -> list[dict[str, Any]]:
    """``queue_added`` / ``queue_removed`` rows (``ts``, ``event``, ``queue``) at ``ts >= since``
    (ms), in time order, from a group's ownership rows (from a checkpoint on: the queues held then
    are known, not added)."""
    held: set[Queue] = set()
    out: list[dict[str, Any]] = []
    for r in sorted(ownership, key=lambda r: _ms(r["ts"])):
        if internal(r["topic"]):
            continue
        q = (r["topic"], r["broker_name"], int(r["queue_id"]))
        t = _ms(r["ts"])
        if r["event"] == "remove":
            if q in held:
                held.discard(q)
                if t >= since:
                    out.append({"ts": t, "event": "queue_removed", "queue": q})
        elif q not in held:
            held.add(q)
            if r["event"] == "change" and t >= since:
                out.append({"ts": t, "event": "queue_added", "queue": q})
    return out


def changes(
    members: Iterable[Mapping[str, Any]],
    groups: Iterable[Mapping[str, Any]],
    ownership: Iterable[Mapping[str, Any]],
    *,
    since: int,
) -> list[dict[str, Any]]:
    """Every change that starts or extends an episode (see the module docs) at ``ts >= since``
    (ms), in time order; member rows as they are, the others as :func:`queue_changes` makes them."""
    out: list[dict[str, Any]] = [dict(r) for r in members if r["event"] in ("join", "leave") and _ms(r["ts"]) >= since]
    previous: tuple[list[str], Any] | None = None
    for r in sorted(groups, key=lambda r: _ms(r["ts"])):
        now = (sorted(t for t in r.get("subscriptions") or [] if not internal(t)), r.get("strategy"))
        if r["event"] == "subscription" and _ms(r["ts"]) >= since and now != previous:
            row = {"ts": r["ts"], "event": "subscription", "before": previous and previous[0], "after": now[0]}
            out.append({**row, "strategy": now[1]})
        previous = now
    out += queue_changes(ownership, since=since)
    return sorted(out, key=lambda r: _ms(r["ts"]))


def members_at(members: Iterable[Mapping[str, Any]], t: int) -> dict[tuple[str, str], str | None]:
    """The connections ``(client id, address)`` of a group at ``t`` (ms) with the strategy each
    reports: a tick's checkpoint rows replace the state, joins and leaves change it."""
    state: dict[tuple[str, str], str | None] = {}
    rows = sorted((r for r in members if _ms(r["ts"]) <= t), key=lambda r: _ms(r["ts"]))
    for _t, tick in groupby(rows, key=lambda r: _ms(r["ts"])):
        batch = list(tick)
        if any(r["event"] == "checkpoint" for r in batch):
            state = {}
        for r in batch:
            key = (r["client_id"], r["client_addr"])
            if r["event"] == "leave":
                state.pop(key, None)
            else:
                state[key] = r.get("strategy")
    return state


def causes(
    rows: Sequence[Mapping[str, Any]],
    connected: Mapping[tuple[str, str], str | None],
    held: Iterable[Queue] = (),
) -> list[str]:
    """The causes (see the module docs) of an episode made of the changes ``rows``, with
    ``connected`` the connections after them (:func:`members_at`) and ``held`` the queues the
    group held after them."""
    out = [f"joined: {r['client_id']} ({r['client_addr']})" for r in rows if r["event"] == "join"]
    out += [f"left: {r['client_id']} ({r['client_addr']})" for r in rows if r["event"] == "leave"]
    for r in rows:
        if r["event"] == "subscription":
            before, after = set(r["before"] or ()), set(r["after"] or ())
            moved = [f"+{t}" for t in sorted(after - before)] + [f"-{t}" for t in sorted(before - after)]
            out.append(f"subscription changed: {' '.join(moved) or 'strategy ' + str(r.get('strategy'))}")
    still = Counter(b for _t, b, _q in held)
    for kind in ("queue_added", "queue_removed"):
        per: dict[tuple[str, str], int] = defaultdict(int)
        for r in rows:
            if r["event"] == kind:
                per[r["queue"][0], r["queue"][1]] += 1
        gone: dict[str, int] = defaultdict(int)
        for (topic, broker), n in sorted(per.items()):
            if kind == "queue_removed" and not still[broker] and len(still) > 0:
                gone[broker] += n
            else:
                out.append(f"queues {'added' if kind == 'queue_added' else 'removed'}: {topic} on {broker} ({n})")
        out += [f"broker gone: {b} ({n} queues)" for b, n in sorted(gone.items())]
    reported: dict[str, list[str]] = defaultdict(list)
    for (cid, _addr), strategy in sorted(connected.items()):
        if strategy is not None and cid not in reported[strategy]:
            reported[strategy].append(cid)
    if len(reported) > 1:
        out.append("strategies differ: " + "; ".join(f"{s} ({', '.join(ids)})" for s, ids in sorted(reported.items())))
    return out or ["unknown"]


def held_at(ownership: Iterable[Mapping[str, Any]], t: int) -> set[Queue]:
    """The queues a group held at ``t`` (ms): seen in its ownership rows and not removed since."""
    held: set[Queue] = set()
    for r in sorted(ownership, key=lambda r: _ms(r["ts"])):
        if _ms(r["ts"]) > t:
            break
        q = (r["topic"], r["broker_name"], int(r["queue_id"]))
        if r["event"] == "remove":
            held.discard(q)
        else:
            held.add(q)
    return held


def member_name(m: Mapping[str, Any]) -> str:
    """A Kafka member as causes name it: ``CLIENT (HOST, member ID[, instance I])``.

    >>> member_name({"client_id": "c1", "client_addr": "/10.0.0.1", "member_id": "c1-7f", "instance_id": None})
    'c1 (/10.0.0.1, member c1-7f)'
    """
    instance = f", instance {m['instance_id']}" if m.get("instance_id") else ""
    return f"{m['client_id']} ({m['client_addr']}, member {m['member_id']}{instance})"


def protocol_change(before: tuple[str, Any], after: tuple[str, Any]) -> str:
    """The cause a change of a Kafka group's protocol states: ``(group type, assignor)`` before and
    after; from ``classic`` to ``consumer`` (KIP-848) an upgrade, back a downgrade.

    >>> protocol_change(("classic", "range"), ("consumer", "uniform"))
    'protocol upgraded: classic -> consumer (assignor range -> uniform)'
    >>> protocol_change(("consumer", "uniform"), ("classic", "uniform"))
    'protocol downgraded: consumer -> classic'
    """
    (old, old_assignor), (new, new_assignor) = before, after
    how = {("classic", "consumer"): "upgraded", ("consumer", "classic"): "downgraded"}.get((old, new), "changed")
    text = f"protocol {how}: {old} -> {new}"
    if old_assignor and new_assignor and old_assignor != new_assignor:
        text += f" (assignor {old_assignor} -> {new_assignor})"
    return text


def kafka_causes(
    *,
    joined: Sequence[Mapping[str, Any]],
    left: Sequence[Mapping[str, Any]],
    replaced: Sequence[Mapping[str, Any]],
    subscriptions: Sequence[Mapping[str, Any]],
    partitions: Sequence[Mapping[str, Any]],
    protocols: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """The causes of a Kafka episode (see the module docs) from its member changes (``left``
    rows carry ``vanished``: the evidence of a session expiry, or ``None``), its static
    replacements (``instance_id``, ``old`` and ``new`` members), the changes of the group's
    subscriptions and assignor (``before`` and ``after``: ``(topics, assignor)``), its
    :func:`queue_changes` and the changes of its group protocol (``before`` and ``after``:
    ``(group type, assignor)``), which come first.

    >>> m = {"client_id": "c2", "client_addr": "/10.0.0.2", "member_id": "c2-1", "instance_id": None}
    >>> kafka_causes(joined=[m], left=[{**m, "member_id": "c2-0", "vanished": "no commit for 9 s"}], replaced=[],
    ...              subscriptions=[], partitions=[{"event": "queue_added", "queue": ("T", "", 3)}])[1:]
    ['vanished: c2 (/10.0.0.2, member c2-0): no commit for 9 s', 'partitions added: T (1)']
    """
    out = [protocol_change(r["before"], r["after"]) for r in protocols]
    out += [f"joined: {member_name(m)}" for m in joined]
    out += [f"left: {member_name(m)}" for m in left if not m.get("vanished")]
    out += [f"vanished: {member_name(m)}: {m['vanished']}" for m in left if m.get("vanished")]
    out += [
        f"fenced: instance {r['instance_id']}, member {r['old']['member_id']} replaced by {member_name(r['new'])}"
        for r in replaced
    ]
    for r in subscriptions:
        (before, old), (after, new) = r["before"], r["after"]
        gained, lost = sorted(set(after) - set(before)), sorted(set(before) - set(after))
        moved = [f"+{t}" for t in gained] + [f"-{t}" for t in lost]
        if moved:
            out.append(f"subscription changed: {' '.join(moved)}")
        if old != new:
            out.append(f"subscription changed: assignor {old} -> {new}")
    for kind, word in (("queue_added", "added"), ("queue_removed", "removed")):
        per: dict[str, int] = defaultdict(int)
        for r in partitions:
            if r["event"] == kind:
                per[r["queue"][0]] += 1
        out += [f"partitions {word}: {topic} ({n})" for topic, n in sorted(per.items())]
    return out or ["unknown"]
