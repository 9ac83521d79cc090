"""Seeded inputs for the broker-side (KIP-848) ``uniform`` and ``range`` golden vectors.

Inputs only: this module builds group states (members in the coordinator's order, subscriptions,
current assignments in the order given, topic partition counts); the expected answers come from
Kafka's Java assignor classes (see the "Provenance" section of this directory's README), never
from our own code.  ``python tests/vectors/kafka/server_cases.py > cases.jsonl`` writes the cases.

Example:
    >>> cases = list(generate(seed=26))
    >>> sorted({c["assignor"] for c in cases})
    ['range', 'uniform']
"""

from __future__ import annotations

import base64
import json
import random
import sys
from collections.abc import Iterator
from typing import Any

SEED = 26

Case = dict[str, Any]


def uuid_string(msb: int, lsb: int) -> str:
    """Kafka's ``Uuid.toString()``: unpadded base64url of the 16 big-endian bytes."""
    raw = (msb & (2**64 - 1)).to_bytes(8, "big") + (lsb & (2**64 - 1)).to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def random_uuid(rng: random.Random) -> str:
    """A random topic id (both halves random, so about half have a negative signed msb)."""
    return uuid_string(rng.getrandbits(64), rng.getrandbits(64))


def uuid_with_hash(rng: random.Random, target: int) -> str:
    """A random Uuid whose Java ``hashCode()`` is ``target`` (32-bit), for bucket collisions."""
    msb = rng.getrandbits(64)
    lsb_hi = rng.getrandbits(32)
    xor_hi = (msb >> 32) ^ lsb_hi
    want_lo = (target ^ xor_hi) & 0xFFFFFFFF  # hashCode = hi32(msb^lsb) ^ lo32(msb^lsb)
    lsb_lo = want_lo ^ (msb & 0xFFFFFFFF)
    return uuid_string(msb, (lsb_hi << 32) | lsb_lo)


def member(
    member_id: str,
    subs: list[str],
    current: list[tuple[str, list[int]]] | None = None,
    instance_id: str | None = None,
    rack: str | None = None,
) -> dict[str, Any]:
    return {
        "member_id": member_id,
        "instance_id": instance_id,
        "rack": rack,
        "subscribed_topic_ids": subs,
        "current_assignment": [[t, ps] for t, ps in (current or [])],
    }


def _member_ids(rng: random.Random, n: int) -> list[str]:
    style = rng.choice(["plain", "uuidish", "astral"])
    ids = []
    for i in range(n):
        if style == "plain":
            ids.append(f"m{rng.randrange(1000):03d}-{i}")
        elif style == "uuidish":
            ids.append(random_uuid(rng) + f"-{i}")
        else:
            ids.append(rng.choice(["\U0001f600", "\uff61", "a", "Z"]) + f"{i}")
    return ids


def _instance_ids(rng: random.Random, n: int, how: str) -> list[str | None]:
    pool = ["i-\U0001f600", "i-\uff61", "i-a", "i-B", "i-\u00e9", "i-z", "i-\U00010000", "i-\ufffd"]
    out: list[str | None] = []
    for i in range(n):
        if how == "all" or (how == "some" and rng.random() < 0.5):
            out.append(rng.choice(pool) + f"{rng.randrange(100)}-{i}")
        else:
            out.append(None)
    return out


def _topics(rng: random.Random, n: int, collide: bool, max_parts: int) -> dict[str, int]:
    if collide:
        # Ids sharing one bucket of a 16-slot HashMap table, split over 2 and 4 buckets of 32 and 64
        # slots: exercises insertion order inside a bucket and the resize Java does instead of
        # building a tree bin when a bucket of a table under 64 slots reaches its ninth entry.
        base = rng.getrandbits(4)
        ids = [uuid_with_hash(rng, _spread_to(rng, base | rng.choice([0, 0x10, 0x20, 0x30]))) for _ in range(n)]
    else:
        ids = [random_uuid(rng) for _ in range(n)]
    return {t: rng.randrange(0, max_parts + 1) for t in ids}


def _spread_to(rng: random.Random, low6: int) -> int:
    """A random 32-bit hash h whose spread value ``h ^ (h >>> 16)`` ends in the 6 bits ``low6``."""
    hi = rng.getrandbits(16)
    lo = (rng.getrandbits(10) << 6 | low6) ^ hi
    return (hi << 16) | (lo & 0xFFFF)


def _settled(
    rng: random.Random,
    ids: list[str],
    subs: dict[str, list[str]],
    topics: dict[str, int],
) -> dict[str, list[tuple[str, list[int]]]]:
    """A plausible earlier assignment: each partition owned by a random subscriber (or nobody)."""
    owned: dict[str, dict[str, list[int]]] = {m: {} for m in ids}
    for t, n in topics.items():
        subscribers = [m for m in ids if t in subs[m]]
        if not subscribers:
            continue
        for p in range(n):
            if rng.random() < 0.85:
                m = rng.choice(subscribers)
                owned[m].setdefault(t, []).append(p)
    out: dict[str, list[tuple[str, list[int]]]] = {}
    for m in ids:
        items = list(owned[m].items())
        rng.shuffle(items)  # current assignment order is part of the contract
        for _, ps in items:
            if rng.random() < 0.5:
                rng.shuffle(ps)
        out[m] = items
    return out


def _group(rng: random.Random, kind: str, n: int) -> Case:
    """One random group state; ``kind`` picks subscriptions and history."""
    n_members = rng.randint(1, 12)
    n_topics = rng.choice([1, 2, 3, 5, 8, 11, 12, 13, 20, 25, 30, 40, 50])
    collide = n_topics <= 13 and rng.random() < 0.4
    max_parts = rng.choice([1, 3, 8, 16])
    topics = _topics(rng, n_topics, collide, max_parts)
    tids = list(topics)
    ids = _member_ids(rng, n_members)
    static = rng.choice(["none", "some", "all"])
    insts = _instance_ids(rng, n_members, static)
    homogeneous = kind.startswith("homo")
    subs: dict[str, list[str]] = {}
    for m in ids:
        if homogeneous:
            order = tids[:]
            rng.shuffle(order)
            subs[m] = order
        else:
            k = rng.choice([0, 1, max(1, len(tids) // 2), len(tids)])
            subs[m] = rng.sample(tids, k)
    tags = [kind, f"static:{static}", f"topics:{n_topics}"] + (["hash-collisions"] if collide else [])
    current: dict[str, list[tuple[str, list[int]]]] = {m: [] for m in ids}
    history = rng.choice(["fresh", "settled", "joined", "left", "partitions-added", "topic-removed",
                          "static-replaced", "subscription-changed"])  # fmt: skip
    if history != "fresh":
        current = _settled(rng, ids, subs, topics)
        tags.append(f"prior:{history}")
        if history == "joined":
            new = f"joined-{n}"
            ids.append(new)
            insts.append(None)
            subs[new] = subs[ids[0]][:] if homogeneous else rng.sample(tids, rng.randint(0, len(tids)))
            current[new] = []
        elif history == "left" and len(ids) > 1:
            gone = rng.randrange(len(ids))
            del current[ids[gone]]
            del subs[ids[gone]]
            del ids[gone]
            del insts[gone]
        elif history == "partitions-added":
            for t in rng.sample(tids, max(1, len(tids) // 3)):
                topics[t] += rng.randint(1, 5)
        elif history == "topic-removed" and len(tids) > 1:
            t = rng.choice(tids)
            del topics[t]
            for m in ids:
                subs[m] = [x for x in subs[m] if x != t]  # assignment of the topic stays behind
        elif history == "static-replaced":
            i = rng.randrange(len(ids))
            insts[i] = insts[i] or f"i-static-{n}"
            old, ids[i] = ids[i], f"replacement-{n}"  # new member id, same instance id
            subs[ids[i]] = subs.pop(old)
            current[ids[i]] = current.pop(old)  # the replacement inherits the assignment
        elif history == "subscription-changed":
            for m in ids:
                if homogeneous:
                    subs[m] = [t for t in subs[m] if t != tids[0]]
                elif rng.random() < 0.5:
                    subs[m] = rng.sample(tids, rng.randint(0, len(tids)))
    members = [member(m, subs[m], current[m], insts[i], rng.choice([None, "r1", "r2"])) for i, m in enumerate(ids)]
    return {"topics": topics, "members": members, "tags": tags}


def _edge_cases(rng: random.Random) -> Iterator[Case]:
    t = [random_uuid(rng) for _ in range(4)]
    # More members than partitions; a member subscribed to nothing; empty group topics.
    yield {"topics": {t[0]: 2}, "members": [member(f"m{i}", [t[0]]) for i in range(5)], "tags": ["more-members"]}
    yield {"topics": {t[0]: 3, t[1]: 2}, "members": [member("a", [t[0], t[1]]), member("b", []), member("c", [t[1]])],
           "tags": ["empty-subscription"]}  # fmt: skip
    yield {"topics": {t[0]: 3}, "members": [member("a", []), member("b", [])], "tags": ["nobody-subscribed"]}
    # A subscribed topic missing from the metadata: Java's error message.
    yield {"topics": {t[0]: 3}, "members": [member("a", [t[0], t[1]]), member("b", [t[0], t[1]])],
           "tags": ["missing-topic", "homogeneous"]}  # fmt: skip
    yield {"topics": {t[0]: 3}, "members": [member("a", [t[0]]), member("b", [t[0], t[2]])],
           "tags": ["missing-topic", "heterogeneous"]}  # fmt: skip
    # Topic-id ties in the heterogeneous comparator: same partitions per subscriber and subscriber count,
    # ids chosen with msb of both signs so signed and unsigned orders disagree.
    neg = uuid_string(0x8000_0000_0000_0001, 5)
    pos = uuid_string(0x7FFF_FFFF_FFFF_FFFF, 5)
    yield {"topics": {neg: 4, pos: 4, t[0]: 2},
           "members": [member("a", [neg, pos, t[0]]), member("b", [neg, pos]), member("c", [t[0]])],
           "tags": ["uuid-signed-order", "heterogeneous"]}  # fmt: skip
    # An over-quota member whose current partitions are listed out of order: the first ones kept.
    yield {"topics": {t[0]: 6},
           "members": [member("a", [t[0]], [(t[0], [5, 0, 3, 1, 4, 2])]), member("b", [t[0]])],
           "tags": ["given-order-kept", "homogeneous"]}  # fmt: skip


def _tree_bin_groups(rng: random.Random, count: int) -> Iterator[Case]:
    """Homogeneous groups whose topic ids put 9 or more entries into one bin of a table of 64+
    slots, where Java's HashMap builds a red-black tree bin (iterated root first): some share the
    whole hash (ordered by ``Uuid.compareTo``), others only the bin (ordered by hash)."""
    for _ in range(count):
        n = rng.randint(20, 70)
        crowd = rng.randint(9, min(24, n))
        low = rng.getrandbits(7)
        same_hash = rng.random() < 0.5
        fixed = _spread_to(rng, low & 63) if same_hash else None
        ids = [
            uuid_with_hash(rng, fixed if fixed is not None else _spread_to_bits(rng, low, 7)) for _ in range(crowd)
        ] + [random_uuid(rng) for _ in range(n - crowd)]
        rng.shuffle(ids)
        topics = {t: rng.randrange(0, 6) for t in ids}
        m = rng.randint(1, 9)
        members = [member(f"m{j}", ids[:]) for j in range(m)]
        if rng.random() < 0.5:  # a settled earlier state, listed in shuffled order
            current = _settled(rng, [x["member_id"] for x in members], {x["member_id"]: ids for x in members}, topics)
            members = [{**x, "current_assignment": [[t, ps] for t, ps in current[x["member_id"]]]} for x in members]
        tags = ["homogeneous", "tree-bin", f"topics:{n}", f"crowd:{crowd}", "same-hash" if same_hash else "same-bin"]
        yield {"topics": topics, "members": members, "tags": tags}


def _spread_to_bits(rng: random.Random, low: int, bits: int) -> int:
    """A random 32-bit hash whose spread value ends in the ``bits`` low bits of ``low``."""
    hi = rng.getrandbits(16)
    mask = (1 << bits) - 1
    lo = ((rng.getrandbits(16) & ~mask) | (low & mask)) ^ hi
    return (hi << 16) | (lo & 0xFFFF)


def generate(seed: int = SEED, per_kind: int = 150) -> Iterator[Case]:
    """Every case, twice over: once for ``uniform`` and once for ``range`` (same input)."""
    rng = random.Random(seed)
    base: list[Case] = list(_edge_cases(rng))
    n = 0
    for kind in ["homogeneous", "heterogeneous"]:
        for _ in range(per_kind):
            base.append(_group(rng, kind, n))
            n += 1
    base += _tree_bin_groups(rng, 40)
    for i, case in enumerate(base):
        for assignor in ["uniform", "range"]:
            yield {"id": f"server-{assignor}-{i:04d}", "assignor": assignor, **case}


def main() -> None:
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else SEED
    for case in generate(seed):
        sys.stdout.write(json.dumps(case, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
