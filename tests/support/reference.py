"""A plain-Python reference of RocketMQ allocation, written from ../shared/spec/rocketmq.md §1–2
and independent of the Rust core. It is deliberately literal (and slow): per-client calls that
rebuild everything, like the Java classes do. Used by the differential tests and, as the baseline,
by the benchmarks.

Queues are ``(topic, broker, queue_id)`` tuples; results are positions in ``mq_all``.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from typing import Any


class JavaIllegalArgument(Exception):
    pass


class JavaNullPointer(Exception):
    pass


def utf16(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


def queue_key(q: tuple[str, str, int]) -> tuple[bytes, bytes, int]:
    return (utf16(q[0]), utf16(q[1]), q[2])


def to_string(q: tuple[str, str, int]) -> str:
    return f"MessageQueue [topic={q[0]}, brokerName={q[1]}, queueId={q[2]}]"


def getbytes(s: str, charset: str) -> bytes:
    if charset == "UTF-8":
        return s.encode("utf-8")
    limit = 0xFF if charset == "ISO-8859-1" else 0x7F
    return bytes(ord(ch) if ord(ch) <= limit else ord("?") for ch in s)


def md5_hash(s: str, charset: str = "UTF-8") -> int:
    return int.from_bytes(hashlib.md5(getbytes(s, charset)).digest()[:4], "big")


def check(current: str | None, mq_all: list[Any] | None, cid_all: list[str] | None) -> bool:
    if not current:
        raise JavaIllegalArgument("currentCID is empty")
    if not mq_all:
        raise JavaIllegalArgument("mqAll is null or mqAll empty")
    if not cid_all:
        raise JavaIllegalArgument("cidAll is null or cidAll empty")
    return current in cid_all


def avg(current, mq_all, cid_all) -> list[int]:
    if not check(current, mq_all, cid_all):
        return []
    i, n, c = cid_all.index(current), len(mq_all), len(cid_all)
    mod = n % c
    if n <= c:
        size = 1
    elif mod > 0 and i < mod:
        size = n // c + 1
    else:
        size = n // c
    start = i * size if (mod > 0 and i < mod) else i * size + mod
    take = min(size, n - start)
    return list(range(start, start + take)) if take > 0 else []


def circle(current, mq_all, cid_all) -> list[int]:
    if not check(current, mq_all, cid_all):
        return []
    i, c = cid_all.index(current), len(cid_all)
    return [k for k in range(i, len(mq_all)) if k % c == i]


def consistent_hash(current, mq_all, cid_all, vnodes: int = 10, charset: str = "UTF-8") -> list[int]:
    if not check(current, mq_all, cid_all):
        return []
    ring: dict[int, str] = {}
    for cid in cid_all:
        existing = sum(1 for owner in ring.values() if owner == cid)
        for r in range(existing, existing + vnodes):
            ring[md5_hash(f"{cid}-{r}", charset)] = cid
    keys = sorted(ring)
    out = []
    for k, q in enumerate(mq_all):
        if not keys:
            continue
        h = md5_hash(to_string(q), charset)
        i = bisect.bisect_left(keys, h)
        if ring[keys[i if i < len(keys) else 0]] == current:
            out.append(k)
    return out


def java_split_at(s: str) -> list[str]:
    if "@" not in s:
        return [s]
    parts = s.split("@")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def machine_room(current, mq_all, cid_all, idcs) -> list[int]:
    if not check(current, mq_all, cid_all):
        return []
    i, c = cid_all.index(current), len(cid_all)
    premq = []
    for k, q in enumerate(mq_all):
        parts = java_split_at(q[1])
        if len(parts) == 2:
            if idcs is None:
                raise JavaNullPointer()
            if parts[0] in idcs:
                premq.append(k)
    m, r = divmod(len(premq), c)
    out = premq[i * m : i * m + m]
    if r > i:
        out.append(premq[i + m * c])
    return out


def prefix_room(s: str) -> str:
    return s.split("@", 1)[0]


def nearby(current, mq_all, cid_all, inner) -> list[int]:
    if not check(current, mq_all, cid_all):
        return []
    q_rooms: dict[str, list[int]] = {}
    for k, q in enumerate(mq_all):
        room = prefix_room(q[1])
        if not room:
            raise JavaIllegalArgument(f"Machine room is null for mq {to_string(q)}")
        q_rooms.setdefault(room, []).append(k)
    c_rooms: dict[str, list[str]] = {}
    for cid in cid_all:
        room = prefix_room(cid)
        if not room:
            raise JavaIllegalArgument(f"Machine room is null for consumer id {cid}")
        c_rooms.setdefault(room, []).append(cid)
    out = []
    mine = prefix_room(current)
    positions = q_rooms.pop(mine, None)
    if positions:
        sub = inner(current, [mq_all[k] for k in positions], c_rooms[mine])
        out += [positions[j] for j in sub]
    for room in sorted(q_rooms, key=utf16):
        if room not in c_rooms:
            positions = q_rooms[room]
            out += [positions[j] for j in inner(current, [mq_all[k] for k in positions], cid_all)]
    return out


def owners(allocate, mq_all, cid_all) -> list[int]:
    """Whole group by calling ``allocate`` for every distinct id (what a fleet of clients does)."""
    out = [-1] * len(mq_all)
    for cid in dict.fromkeys(cid_all):
        for k in allocate(cid, mq_all, cid_all):
            if out[k] == -1:
                out[k] = cid_all.index(cid)
    return out


# --- Whole-group plain-Python versions: the fair baselines for the benchmarks (one pass per group,
# ring built once), checked against the literal per-client functions above in test_properties.


def group_avg(n: int, cid_all: list[str]) -> list[int]:
    c = len(cid_all)
    first: dict[str, int] = {}
    out = [-1] * n
    for j, cid in enumerate(cid_all):
        if first.setdefault(cid, j) != j:
            continue
        mod = n % c
        size = 1 if n <= c else (n // c + 1 if (mod > 0 and j < mod) else n // c)
        start = j * size if (mod > 0 and j < mod) else j * size + mod
        for k in range(start, min(start + size, n)):
            out[k] = j
    return out


def group_circle(n: int, cid_all: list[str]) -> list[int]:
    c = len(cid_all)
    first: dict[str, int] = {}
    firsts = [first.setdefault(cid, j) == j for j, cid in enumerate(cid_all)]
    return [k % c if firsts[k % c] else -1 for k in range(n)]


def group_consistent_hash(mq_all: list[tuple[str, str, int]], cid_all: list[str], vnodes: int = 10) -> list[int]:
    first: dict[str, int] = {}
    ring: dict[int, int] = {}
    count: dict[int, int] = {}
    for j, cid in enumerate(cid_all):
        owner = first.setdefault(cid, j)
        r = count.get(owner, 0)
        for rep in range(r, r + vnodes):
            h = md5_hash(f"{cid}-{rep}")
            prev = ring.get(h)
            if prev is not None:
                count[prev] -= 1
            ring[h] = owner
            count[owner] = count.get(owner, 0) + 1
    keys = sorted(ring)
    owners = [ring[k] for k in keys]
    out = []
    for q in mq_all:
        i = bisect.bisect_left(keys, md5_hash(to_string(q)))
        out.append(owners[i if i < len(keys) else 0] if keys else -1)
    return out


def java_sorted_group(mq_all: list[tuple[str, str, int]], cid_all: list[str]) -> tuple[list[int], list[int]]:
    """Permutations that sort queues and ids the Java way (what RebalanceImpl does first)."""
    qperm = sorted(range(len(mq_all)), key=lambda k: queue_key(mq_all[k]))
    cperm = sorted(range(len(cid_all)), key=lambda j: utf16(cid_all[j]))
    return qperm, cperm


def consistent_hash_bounded(
    current, mq_all, cid_all, vnodes: int = 10, charset: str = "UTF-8", epsilon: float = 0.25
) -> list[int]:
    """CONSISTENT_HASH_BOUNDED literally as its docstring says: the same ring, queues in (hash,
    position) order, home (the CONSISTENT_HASH owner) first while it has room, then the overflow
    walking clockwise to the first node whose client has room."""
    if not check(current, mq_all, cid_all):
        return []
    ring: dict[int, str] = {}
    for cid in cid_all:
        existing = sum(1 for owner in ring.values() if owner == cid)
        for r in range(existing, existing + vnodes):
            ring[md5_hash(f"{cid}-{r}", charset)] = cid
    if not ring:
        return []
    keys = sorted(ring)
    n, k = len(mq_all), len(set(ring.values()))
    cap = min(n, math.ceil((1.0 + epsilon) * n / k))
    hashes = [md5_hash(to_string(q), charset) for q in mq_all]
    load: dict[str, int] = {}
    owner_of: dict[int, str] = {}
    overflow = []
    for pos in sorted(range(n), key=lambda p: (hashes[p], p)):
        home = ring[keys[bisect.bisect_left(keys, hashes[pos]) % len(keys)]]
        if load.get(home, 0) < cap:
            owner_of[pos] = home
            load[home] = load.get(home, 0) + 1
        else:
            overflow.append(pos)
    for pos in overflow:
        i = bisect.bisect_left(keys, hashes[pos])
        while load.get(ring[keys[i % len(keys)]], 0) >= cap:
            i += 1
        owner_of[pos] = ring[keys[i % len(keys)]]
        load[owner_of[pos]] = load.get(owner_of[pos], 0) + 1
    return sorted(p for p, o in owner_of.items() if o == current)
