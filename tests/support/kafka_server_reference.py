"""Straightforward pure-Python transcriptions of Kafka's broker-side ``RangeAssignor`` and of
``UniformHomogeneousAssignmentBuilder`` (``uniform`` when every member subscribes to the same
topics): the like-for-like baseline of ``benches/test_bench_kafka_server.py`` and an independent
check of the Rust core. Same input and output shapes as ``mqbalance.kafka.server_assign``.
Not covered: ``uniform`` over heterogeneous groups, and Java tree bins (more than 8 topic ids in
one bin of a 64+ slot table).

>>> t = "AAAAAAAAAAAAAAAAAAAAAQ"
>>> uniform([{"member_id": "b", "subscribed_topic_ids": [t]}, {"member_id": "a", "subscribed_topic_ids": [t]}], {t: 3})
{'b': {'AAAAAAAAAAAAAAAAAAAAAQ': [0, 1]}, 'a': {'AAAAAAAAAAAAAAAAAAAAAQ': [2]}}
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

Assignment = dict[str, dict[str, list[int]]]


def _signed(b: bytes) -> int:
    return int.from_bytes(b, "big", signed=True)


def java_hash(topic_id: str) -> int:
    """``Uuid.hashCode()`` of ``Uuid.fromString(topic_id)``, as an unsigned 32-bit value."""
    raw = base64.urlsafe_b64decode(topic_id + "==")
    x = (_signed(raw[:8]) ^ _signed(raw[8:])) & (2**64 - 1)
    return ((x >> 32) ^ x) & 0xFFFFFFFF


def hash_set_order(ids: Sequence[str]) -> list[str]:
    """Iteration order of ``new HashSet<>(ids)`` (list bins only: resizes at a bin's ninth entry)."""
    cap = max(16, 1 << (max(int(len(ids) / 0.75) + 1, 16) - 1).bit_length())
    spread = [h ^ (h >> 16) for h in map(java_hash, ids)]
    counts: dict[int, int] = {}
    for i, h in enumerate(spread):
        counts[h & (cap - 1)] = counts.get(h & (cap - 1), 0) + 1
        if counts[h & (cap - 1)] > 8:
            if cap >= 64:
                raise ValueError("tree bin: not modelled")
            cap *= 2
            counts = {}
            for g in spread[: i + 1]:
                counts[g & (cap - 1)] = counts.get(g & (cap - 1), 0) + 1
    order = sorted(range(len(ids)), key=lambda i: (spread[i] & (cap - 1), i))
    return [ids[i] for i in order]


def _finish(members: Sequence[Mapping[str, Any]], owners: dict[tuple[str, int], str]) -> Assignment:
    out: Assignment = {m["member_id"]: {} for m in members}
    for (t, p), m in sorted(owners.items()):
        out[m].setdefault(t, []).append(p)
    return out


def uniform(members: Sequence[Mapping[str, Any]], topics: Mapping[str, int], *, kafka_4_1: bool = False) -> Assignment:
    """``UniformHomogeneousAssignmentBuilder.build()``; every member must subscribe to the same topics.

    ``kafka_4_1=True``: Kafka 4.1.0's rule (to 4.4.0 at least) instead of 4.0's and trunk 2024-10's
    (the vectors'): a member that
    its retained partitions leave below its quota gives up its extra partition while more members
    remain (itself included) than extra partitions to hand out, so the extras go to members that
    already hold them, else to the last members in order (2 partitions over 5 fresh members: 2024-10
    gives them to the first two, 4.4.0 to the last two)."""
    if not members:
        return {}
    order = hash_set_order(list(members[0]["subscribed_topic_ids"]))
    subscribed = set(order)
    assigned = {(t, p) for m in members for t, ps in m.get("current_assignment") or [] for p in ps}
    unassigned: list[tuple[str, int]] = []
    total = 0
    for t in order:
        if t not in topics:
            raise LookupError(f"Members are subscribed to topic {t} which doesn't exist in the topic metadata.")
        unassigned += [(t, p) for p in range(topics[t]) if (t, p) not in assigned]
        total += topics[t]
    minimum, extra = divmod(total, len(members))
    owners: dict[tuple[str, int], str] = {}
    unfilled: list[tuple[str, int]] = []
    for index, m in enumerate(members):
        has_extra = extra > 0
        quota = minimum + (1 if has_extra else 0)
        for t, ps in m.get("current_assignment") or []:
            if t not in subscribed:
                continue
            if len(ps) <= quota:
                quota -= len(ps)
                owners.update({(t, p): m["member_id"] for p in ps})
                continue
            for p in ps:
                if quota > 0:
                    quota -= 1
                    owners[(t, p)] = m["member_id"]
                else:
                    unassigned.append((t, p))
        if kafka_4_1 and quota > 0 and has_extra and len(members) - index > extra:
            quota -= 1
            has_extra = False
        extra -= 1 if has_extra else 0
        if quota > 0:
            unfilled.append((m["member_id"], quota))
    i = 0
    for member_id, quota in unfilled:
        for tp in unassigned[i : i + quota]:
            owners[tp] = member_id
        i += min(quota, len(unassigned) - i)
    return _finish(members, owners)


def _utf16(s: str) -> bytes:
    return s.encode("utf-16-be")


def range_(members: Sequence[Mapping[str, Any]], topics: Mapping[str, int]) -> Assignment:
    """The server-side ``RangeAssignor.assign()`` (homogeneous and heterogeneous alike)."""

    def key(m: Mapping[str, Any]) -> tuple[int, bytes]:
        inst = m.get("instance_id")
        return (0, _utf16(inst)) if inst is not None else (1, _utf16(m["member_id"]))

    ordered = sorted(members, key=key)
    subscribers: dict[str, list[str]] = {}
    for m in ordered:
        for t in m["subscribed_topic_ids"]:
            if t not in topics:
                raise LookupError("Member is subscribed to a non-existent topic")
            subscribers.setdefault(t, []).append(m["member_id"])
    owners: dict[tuple[str, int], str] = {}
    for t, subs in subscribers.items():
        minimum, extra = divmod(topics[t], len(subs))
        start = 0
        for k, member_id in enumerate(subs):
            end = start + minimum + (1 if k < extra else 0)
            owners.update({(t, p): member_id for p in range(start, end)})
            start = end
    return _finish(members, owners)
