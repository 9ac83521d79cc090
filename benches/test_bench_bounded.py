"""CONSISTENT_HASH_BOUNDED and STICKY (issue 14): balance, movement and time, against the other
strategies measured in the same run.

* ``test_quality``: per size (queues/consumers 64/8, 64/20, 1,000/10, 1,000/100, 10,000/1,000 and,
  with timing on, 1,000,000/10,000) and strategy — max load, idle consumers, and the fraction of
  queues whose owner changes on one join and on one leave, averaged over many joining ids / leaving
  members, next to the lower bounds ⌊m/(n+1)⌋/m and ⌊m/n⌋/m. Writes ``out/bench_bounded.md``.
  The whole-group time is ``bulk.owners`` from unsorted-order columns (Java sort included), best of
  three. Targets checked: bounded (ε = 0.25) max load ≤ ⌈1.25·m/n⌉ always and mean movement ≤ 2× the
  bound at ≥ 10 queues per consumer; sticky max − min ≤ 1 and every move forced (a join moves
  exactly what the newcomer must get, a leave exactly the leaver's queues).
* ``test_time_*``: the whole group through ``bulk.owners`` (presorted columns, built outside the
  timed region), best of the rounds; baseline = CONSISTENT_HASH (for bounded) or AVG (for sticky)
  on the same columns in the same run. Targets: 10k/1k ≤ 10 ms (both), 1M/10k ≤ 1 s (bounded).

``make bench`` (or ``pytest benches/test_bench_bounded.py --benchmark-only``) runs the full sizes.
"""

from __future__ import annotations

import math
import random
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import median_of
from mqbalance import PreviousAssignmentWarning, bulk, sort_client_ids, strategy

OUT = Path(__file__).resolve().parent.parent / "out"
ROWS: list[dict[str, Any]] = []
# (label, name, parameters): the table's rows per size.
STRATEGIES: list[tuple[str, str, dict[str, Any]]] = [
    ("AVG", "AVG", {}),
    ("AVG_BY_CIRCLE", "AVG_BY_CIRCLE", {}),
    ("CONSISTENT_HASH", "CONSISTENT_HASH", {}),
    ("CONSISTENT_HASH_BOUNDED", "CONSISTENT_HASH_BOUNDED", {}),
    ("CONSISTENT_HASH_BOUNDED V=100", "CONSISTENT_HASH_BOUNDED", {"virtual_node_cnt": 100}),
    ("STICKY", "STICKY", {}),
]
SIZES = [(64, 8), (64, 20), (1_000, 10), (1_000, 100), (10_000, 1_000), (1_000_000, 10_000)]


def columns(m: int, brokers: int = 16) -> tuple[list[str], list[str], np.ndarray]:
    per = -(-m // brokers)
    rows = [(f"broker-{b:02d}", q) for b in range(brokers) for q in range(per)][:m]
    return ["TopicTest"] * m, [r[0] for r in rows], np.array([r[1] for r in rows], dtype=np.int64)


def client_ids(n: int, rng: random.Random) -> list[str]:
    return sort_client_ids(f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}@{j}" for j in range(n))


class Group:
    """One topic's queue columns (Java-sorted) and a strategy; owners as client ids per row."""

    def __init__(self, name: str, m: int, params: dict[str, Any]) -> None:
        self.name = name
        self.s = strategy(name, **params)
        self.cols = columns(m)

    def owners(self, ids: list[str], previous: np.ndarray | None = None) -> np.ndarray:
        kw: dict[str, Any] = {}
        if self.name == "STICKY":
            kw["previous"] = [None] * len(self.cols[2]) if previous is None else previous.tolist()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PreviousAssignmentWarning)  # a leaver's queues, freed
            pos = bulk.owners(self.s, *self.cols, ids, **kw)
        return np.asarray(ids, dtype=object)[pos]


def quality(label: str, name: str, params: dict[str, Any], m: int, n: int, trials: int) -> dict[str, Any]:
    rng = random.Random(14)
    g = Group(name, m, params)
    ids = client_ids(n, rng)
    elapsed, base = median_of(lambda: g.owners(ids), 3)
    loads = np.array(list({**dict.fromkeys(ids, 0), **_count(base)}.values()))
    joins, leaves, forced_ok = [], [], True
    for t in range(trials):
        newcomer = f"10.99.{rng.randrange(256)}.{rng.randrange(256)}@new{t}"
        after = g.owners(sort_client_ids([*ids, newcomer]), base)
        moved = int((after != base).sum())
        joins.append(moved / m)
        forced_ok &= name != "STICKY" or moved == m // (n + 1)
        if n > 1:
            leaver = ids[rng.randrange(n)]
            after = g.owners([i for i in ids if i != leaver], base)
            moved = int((after != base).sum())
            leaves.append(moved / m)
            forced_ok &= name != "STICKY" or moved == int((base == leaver).sum())
    return {
        "queues": m,
        "consumers": n,
        "strategy": label,
        "ms": elapsed * 1e3,
        "max_load": int(loads.max()),
        "avg": m / n,
        "idle": int((loads == 0).sum()),
        "spread": int(loads.max() - loads.min()),
        "join": float(np.mean(joins)),
        "join_lb": (m // (n + 1)) / m,
        "leave": float(np.mean(leaves)) if leaves else float("nan"),
        "leave_lb": (m // n) / m,
        "forced_only": bool(forced_ok),
    }


def _count(owners: np.ndarray) -> dict[str, int]:
    keys, counts = np.unique(owners.astype(str), return_counts=True)
    return dict(zip(keys.tolist(), counts.tolist()))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The table's sizes; with timing off (CI, ``--benchmark-disable``) only those up to 1,000 queues."""
    if metafunc.function.__name__ == "test_quality":
        timed = not metafunc.config.getoption("benchmark_disable")
        sizes = [(m, n) for m, n in SIZES if timed or m <= 1_000]
        metafunc.parametrize(("m", "n"), sizes, ids=[f"{m}/{n}" for m, n in sizes])


def test_quality(benchmark, full_size: bool, m: int, n: int, request: pytest.FixtureRequest) -> None:
    """The table (see :func:`pytest_generate_tests` for the sizes)."""
    trials = 40 if m <= 1_000 else 12 if m <= 10_000 else 2
    for label, name, params in STRATEGIES:
        row = quality(label, name, params, m, n, trials)
        ROWS.append(row)
        if name == "CONSISTENT_HASH_BOUNDED":
            assert row["max_load"] <= math.ceil(1.25 * m / n)
            # The movement target is reported in the table, not asserted: it is missed on a
            # leave when the cap ceil(1.25 m / n) rises by one (see the README).
            row["target"] = (
                "yes" if m < 10 * n or max(row["join"] / row["join_lb"], row["leave"] / row["leave_lb"]) <= 2 else "no"
            )
        if name == "STICKY":
            assert row["spread"] <= 1 and row["forced_only"], row
    # The fixture times the bounded whole group at this size (pytest-benchmark's own statistics).
    g = Group("CONSISTENT_HASH_BOUNDED", m, {})
    ids = client_ids(n, random.Random(14))
    benchmark.pedantic(lambda: bulk.owners(g.s, *g.cols, ids, presorted=True), rounds=3, iterations=1)
    if (m, n) == SIZES[-1] or (not full_size and (m, n) == (1_000, 100)):
        _write_table(request)


def _write_table(request: pytest.FixtureRequest) -> None:
    lines = [
        (
            "| queues/consumers | strategy | max load (avg) | idle | moved on join (lower bound) "
            "| moved on leave (lower bound) | whole group (ms) | movement ≤ 2× bound |"
        ),
        "|---|---|---|---|---|---|---:|---|",
    ]
    for r in ROWS:
        lines.append(
            f"| {r['queues']:,}/{r['consumers']:,} | {r['strategy']} | {r['max_load']} ({r['avg']:.1f}) | {r['idle']} "
            f"| {100 * r['join']:.2f} % ({100 * r['join_lb']:.2f} %) | {100 * r['leave']:.2f} % "
            f"({100 * r['leave_lb']:.2f} %) | {r['ms']:.1f} | {r.get('target', '')} |"
        )
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_bounded.md").write_text("\n".join(lines) + "\n")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        for line in lines:
            reporter.write_line(line)


def _cap_holds(m: int, n: int, eps: float = 0.25):
    def check(ours: np.ndarray, base: np.ndarray) -> None:
        assert (ours >= 0).all() and (base >= 0).all()
        assert np.bincount(ours, minlength=n).max() <= math.ceil((1 + eps) * m / n)

    return check


TIMED = [(10_000, 1_000, 0.010), (1_000_000, 10_000, 1.0)]


@pytest.mark.parametrize(("m", "n", "target"), TIMED, ids=[f"{m}/{n}" for m, n, _ in TIMED])
def test_time_bounded(compare, full_size: bool, m: int, n: int, target: float) -> None:
    if not full_size:
        m, n, target = m // 100, n // 10, None
    cols = columns(m)
    ids = client_ids(n, random.Random(1))
    bounded, ch = strategy("CONSISTENT_HASH_BOUNDED"), strategy("CONSISTENT_HASH")
    compare(
        lambda: bulk.owners(bounded, *cols, ids, presorted=True),
        lambda: bulk.owners(ch, *cols, ids, presorted=True),
        check=_cap_holds(m, n),
        target_s=target,
        baseline_rounds=5 if m <= 10_000 else 2,
        label="CONSISTENT_HASH (same run)",
    )


def test_time_sticky_join(compare, full_size: bool) -> None:
    m, n, target = (10_000, 1_000, 0.010) if full_size else (1_000, 100, None)
    cols = columns(m)
    ids = client_ids(n, random.Random(2))
    first = np.asarray(ids, dtype=object)[bulk.owners("STICKY", *cols, ids, presorted=True, previous=[None] * m)]
    previous = first.tolist()
    joined = sort_client_ids([*ids, "10.200.0.1@joiner"])
    sticky, avg = strategy("STICKY"), strategy("AVG")

    def check(ours: np.ndarray, base: np.ndarray) -> None:
        loads = np.bincount(ours, minlength=n + 1)
        assert loads.max() - loads.min() <= 1
        assert int((np.asarray(joined, dtype=object)[ours] != first).sum()) == m // (n + 1)

    compare(
        lambda: bulk.owners(sticky, *cols, joined, presorted=True, previous=previous),
        lambda: bulk.owners(avg, *cols, joined, presorted=True),
        check=check,
        target_s=target,
        baseline_rounds=5,
        label="AVG (same run)",
    )


EPSILONS = [0.1, 0.25, 0.5, 1.0]


def _cap(m: int, k: int, eps: float) -> int:
    return min(m, math.ceil((1 + eps) * m / k))


def movement_vs_epsilon(m: int, n: int, eps: float, steps: int = 3) -> dict[str, Any]:
    """One member more or less (k-1 ↔ k: the same queues move either way) near ``n`` members, as a
    multiple of the lower bound ⌊m/k⌋/m: on the nearest step at which the cap ⌈(1+ε)·m/k⌉ changes
    (and the part of it any rule keeping queues on their CONSISTENT_HASH owner up to the cap must
    move), and on the ``steps`` steps after it (where it does not). ``p``: the share of steps near ``n`` that
    change the cap, ≈ (1+ε)·m/n² when that is below 1."""
    k0 = next(k for d in range(n) for k in (n + d, n - d) if k > 1 and _cap(m, k, eps) != _cap(m, k - 1, eps))
    pool = client_ids(k0 + steps + 1, random.Random(14))
    g = Group("CONSISTENT_HASH_BOUNDED", m, {"epsilon": eps})
    owners = {k: g.owners(sort_client_ids(pool[:k])) for k in range(k0 - 1, k0 + steps + 1)}
    for k, o in owners.items():  # the cap holds at every size
        assert np.unique(o.astype(str), return_counts=True)[1].max() <= _cap(m, k, eps)

    def ratio(k: int) -> float:
        return float((owners[k] != owners[k - 1]).sum()) / (m // k)

    quiet = [ratio(k) for k in range(k0 + 1, k0 + steps + 1) if _cap(m, k, eps) == _cap(m, k - 1, eps)] or [math.nan]
    # Forced on that step, read as a leave k0 -> k0-1 (the cap rises): the leaver's queues move, and
    # every consumer whose CONSISTENT_HASH share reaches the new cap must gain one of its own queues
    # (it held the old cap): one more move each, unless it can take that queue from the leaver's.
    leaver = pool[k0 - 1]
    home = Group("CONSISTENT_HASH", m, {}).owners(sort_client_ids(pool[: k0 - 1]))
    names, shares = np.unique(home.astype(str), return_counts=True)
    reclaimers = set(names[shares >= _cap(m, k0 - 1, eps)].tolist())
    from_leaver = set(home[owners[k0] == leaver].astype(str).tolist())
    forced = int((owners[k0] == leaver).sum()) + len(reclaimers - from_leaver)
    window = range(max(2, n - 50), n + 51)
    p = sum(_cap(m, k, eps) != _cap(m, k - 1, eps) for k in window) / len(window)
    return {
        "eps": eps,
        "k0": k0,
        "cap_change": ratio(k0),
        "forced": forced / (m // k0),
        "quiet": float(np.mean(quiet)),
        "p": p,
    }


def test_movement_vs_epsilon(benchmark, full_size: bool, request: pytest.FixtureRequest) -> None:
    """Movement of CONSISTENT_HASH_BOUNDED against ε (1,000,000/10,000 with timing on, else
    100,000/1,000: the same 100 queues per consumer); writes ``out/bench_bounded_epsilon.md``. With
    ε out of reach (cap = m) it is CONSISTENT_HASH exactly. Timed: the whole group at the smallest ε
    (the most overflow)."""
    m, n = (1_000_000, 10_000) if full_size else (100_000, 1_000)
    rows = [movement_vs_epsilon(m, n, eps) for eps in EPSILONS]
    ids = client_ids(n, random.Random(3))
    same = Group("CONSISTENT_HASH_BOUNDED", m, {"epsilon": float(n)}).owners(ids)
    assert (same == Group("CONSISTENT_HASH", m, {}).owners(ids)).all()
    tight = Group("CONSISTENT_HASH_BOUNDED", m, {"epsilon": EPSILONS[0]})
    benchmark.pedantic(lambda: bulk.owners(tight.s, *tight.cols, ids, presorted=True), rounds=3, iterations=1)
    lines = [
        f"Movement of one join/leave near {m:,}/{n:,}, as a multiple of the lower bound ⌊m/k⌋/m:",
        "",
        (
            "| ε | when the cap ⌈(1+ε)·m/k⌉ changes (of which forced) | otherwise (mean of 3) "
            "| share of group sizes where it changes | expected over group sizes |"
        ),
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        expected = r["p"] * r["cap_change"] + (1 - r["p"]) * r["quiet"]
        lines.append(
            f"| {r['eps']} | {r['cap_change']:.2f}× ({r['forced']:.2f}×; k = {r['k0']:,}) | {r['quiet']:.2f}× "
            f"| {100 * r['p']:.1f} % "
            f"| {expected:.2f}× |"
        )
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_bounded_epsilon.md").write_text("\n".join(lines) + "\n")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        for line in lines:
            reporter.write_line(line)
