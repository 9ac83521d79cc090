"""Groups for the broker-side (KIP-848) assignor benchmarks, shaped as Kafka's own
``ServerSideAssignorBenchmark``: ``members`` members, ``members * ratio // topics`` partitions per
topic; homogeneous (every member subscribes to every topic) or heterogeneous (Kafka's 5 buckets:
members and topics cut into 5 contiguous slices, bucket ``b``'s members subscribe to bucket ``b``'s
topics); a full assignment (nobody owns anything) or an incremental one (the settled assignment of
``members - 1`` members, then ``newMember`` joins, subscribed as the last member).

Each group exists in both input forms: dicts for ``server_assign`` and columns for
``server_assign_columns``, built outside any timed region.

>>> g = build(members=8, ratio=2, topics=4, heterogeneous=False, incremental=True, name="uniform")
>>> len(g.dicts), g.members[-1], int(g.counts.sum())
(8, 'newMember', 16)
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from mqbalance.kafka import server_assign_columns

BUCKETS = 5


def topic_ids(n: int, seed: int = 848) -> list[str]:
    rng = random.Random(seed)
    return [base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=") for _ in range(n)]


@dataclass
class Group:
    """One benchmark input in both forms."""

    name: str
    topic_ids: list[str]
    counts: np.ndarray
    members: list[str]
    subs: list[list[int]]  # topic positions per member (shared list objects within a bucket)
    current: list[list[tuple[int, list[int]]]]
    dicts: list[dict[str, Any]]
    topics: dict[str, int]

    def columns(self) -> dict[str, Any]:
        # The subscription table: one row per distinct subscription list.
        rows: dict[int, int] = {}
        table: list[list[int]] = []
        which = []
        for s in self.subs:
            if id(s) not in rows:
                rows[id(s)] = len(table)
                table.append(s)
            which.append(rows[id(s)])
        sub_off = np.zeros(len(table) + 1, dtype=np.int64)
        sub_off[1:] = np.cumsum([len(s) for s in table])
        cur_rows = [[(t, p) for t, ps in c for p in ps] for c in self.current]
        cur_off = np.zeros(len(self.members) + 1, dtype=np.int64)
        cur_off[1:] = np.cumsum([len(r) for r in cur_rows])
        flat = [x for r in cur_rows for x in r]
        return {
            "topic_ids": self.topic_ids,
            "partition_counts": self.counts,
            "member_ids": self.members,
            "subscription_offsets": sub_off,
            "subscription_topics": np.fromiter((t for s in table for t in s), dtype=np.int64),
            "member_subscription": np.array(which, dtype=np.int64),
            "current_offsets": cur_off,
            "current_topics": np.array([t for t, _ in flat], dtype=np.int64),
            "current_partitions": np.array([p for _, p in flat], dtype=np.int64),
        }


def _subscriptions(n_members: int, n_topics: int, heterogeneous: bool) -> list[list[int]]:
    everything = list(range(n_topics))
    if not heterogeneous:
        return [everything] * n_members
    buckets = min(BUCKETS, n_members)
    per_topic = -(-n_topics // buckets)
    per_member = -(-n_members // buckets)
    out: list[list[int]] = []
    for b in range(buckets):
        topics = everything[b * per_topic : (b + 1) * per_topic]
        out += [topics] * (min((b + 1) * per_member, n_members) - b * per_member)
    return out


def _group(name: str, tids: list[str], counts: np.ndarray, members: list[str], subs: list[list[int]],
           current: list[list[tuple[int, list[int]]]]) -> Group:  # fmt: skip
    # One list of topic ids per distinct subscription, shared by its members, as Kafka's benchmark
    # shares one list of topic names per bucket.
    shared: dict[int, list[str]] = {}
    names = [shared.setdefault(id(s), [tids[t] for t in s]) for s in subs]
    dicts = [
        {
            "member_id": m,
            "subscribed_topic_ids": names[i],
            "current_assignment": [[tids[t], ps] for t, ps in current[i]],
        }
        for i, m in enumerate(members)
    ]
    return Group(name, tids, counts, members, subs, current, dicts, dict(zip(tids, counts.tolist(), strict=True)))


def owners_to_current(owners: np.ndarray, counts: np.ndarray, n_members: int) -> list[list[tuple[int, list[int]]]]:
    """Each member's (topic, partitions) from an owner-per-partition array."""
    current: list[list[tuple[int, list[int]]]] = [[] for _ in range(n_members)]
    start = 0
    for t, c in enumerate(counts.tolist()):
        block = owners[start : start + c]
        start += c
        order = np.argsort(block, kind="stable")
        sorted_owners = block[order]
        bounds = np.flatnonzero(np.diff(sorted_owners)) + 1
        for chunk in np.split(order, bounds):
            if len(chunk) and block[chunk[0]] >= 0:
                current[int(block[chunk[0]])].append((t, chunk.tolist()))
    return current


def build(*, members: int, ratio: int, topics: int, heterogeneous: bool, incremental: bool, name: str) -> Group:
    tids = topic_ids(topics)
    counts = np.full(topics, members * ratio // topics, dtype=np.int64)
    n = members - 1 if incremental else members
    ids = [f"member{i}" for i in range(n)]
    subs = _subscriptions(n, topics, heterogeneous)
    current: list[list[tuple[int, list[int]]]] = [[] for _ in range(n)]
    if incremental:
        settled = _group(name, tids, counts, ids, subs, current)
        owners = server_assign_columns(name, **settled.columns())
        current = owners_to_current(owners, counts, n) + [[]]
        ids = [*ids, "newMember"]
        subs = [*subs, subs[-1]]
    return _group(name, tids, counts, ids, subs, current)
