"""How many partitions each Kafka assignor moves when one member joins, one leaves, or one topic
gains partitions — broker-side ``uniform`` and ``range`` (KIP-848) next to the classic client-side
``sticky`` and ``cooperative-sticky`` — with the lower bound and the balance each reaches.

Every assignor starts from its own settled assignment of a homogeneous group (every member
subscribes to every topic; members ``m0``, ``m1``, ... in that order), then one event:

* ``join``: member ``joined`` is added (last in the coordinator's order);
* ``leave``: the middle member leaves;
* ``grow``: topic 0 gains a quarter more partitions (at least one).

``moved`` counts partitions that existed before and after whose owner changed (the leaver's
partitions included). ``lower_bound`` is the fewest moves any member-balanced result needs from
a balanced start (``uniform``'s settled assignment; see ``_lower_bound``); ``range`` does not start
balanced once a topic has fewer partitions than the group has members.
``member_spread`` is max - min partitions per member;
``topic_spread`` the largest max - min of one topic's partitions per member. Cooperative-sticky
runs its two KIP-429 rounds (revoke, then assign), and the table shows the final placement.

    python benches/kafka_server_movement.py --out benches/kafka_server_results
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from pathlib import Path

import numpy as np

from kafka_server_groups import owners_to_current, topic_ids
from mqbalance.kafka import assign_columns, server_assign_columns

SIZES = [(64, 8, 4), (1_000, 100, 10), (10_000, 1_000, 10), (100_000, 10_000, 100)]  # partitions, members, topics
ASSIGNORS = ["uniform", "range (server)", "sticky", "cooperative-sticky"]
EVENTS = ["join", "leave", "grow"]


def _server(name: str, counts: list[int], members: list[str], owners: np.ndarray | None, prev: list[str]) -> np.ndarray:
    n = len(members)
    tids = topic_ids(len(counts))
    cols: dict[str, object] = {}
    if owners is not None:
        # Owners are positions in ``prev``; re-key them by member id for the new member list.
        pos = {m: i for i, m in enumerate(members)}
        remap = np.array([pos.get(m, -1) for m in prev] + [-1], dtype=np.int64)
        own = _reblock(remap[owners], counts)  # partitions beyond the old counts are new: unowned
        cur = owners_to_current(own, np.asarray(counts), n)
        rows = [[(t, p) for t, ps in c for p in ps] for c in cur]
        flat = [x for r in rows for x in r]
        cols = {
            "current_offsets": np.concatenate([[0], np.cumsum([len(r) for r in rows])]),
            "current_topics": np.array([t for t, _ in flat], dtype=np.int64),
            "current_partitions": np.array([p for _, p in flat], dtype=np.int64),
        }
    everything = list(range(len(counts)))
    return server_assign_columns(
        "range" if name.startswith("range") else "uniform",
        tids,
        counts,
        members,
        np.array([0, len(counts)], dtype=np.int64),
        np.array(everything, dtype=np.int64),
        member_subscription=np.zeros(n, dtype=np.int64),
        **cols,  # type: ignore[arg-type]
    ).astype(np.int64)


_OLD_COUNTS: list[int] = []


def _reblock(owners: np.ndarray, counts: list[int]) -> np.ndarray:
    """Owners laid out for ``_OLD_COUNTS`` re-laid for ``counts`` (new partitions unowned)."""
    out = np.full(int(np.sum(counts)), -1, dtype=np.int64)
    src = dst = 0
    for old, new in zip(_OLD_COUNTS, counts, strict=True):
        out[dst : dst + old] = owners[src : src + old]
        src += old
        dst += new
    return out


def _sticky(name: str, counts: list[int], members: list[str], owners: np.ndarray | None, prev: list[str]) -> np.ndarray:
    topics = {f"t{k}": c for k, c in enumerate(counts)}
    names = list(topics)
    subs = [names] * len(members)
    owned = None
    if owners is not None:
        pos = {m: i for i, m in enumerate(members)}
        remap = np.array([pos.get(m, -1) for m in prev] + [-1], dtype=np.int64)
        own = _reblock(remap[owners], counts)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        idx = np.flatnonzero(own >= 0)
        topic = np.searchsorted(starts, idx, side="right") - 1
        owned = (own[idx], topic, idx - starts[topic])
    rounds = 2 if name == "cooperative-sticky" else 1
    result = None
    for r in range(rounds):
        a = assign_columns(name, topics, members, subs, owned=owned, generations=[1 + r] * len(members))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        result = np.full(int(np.sum(counts)), -1, dtype=np.int64)
        result[starts[a.topic] + a.partition] = a.member
        owned = (a.member, a.topic, a.partition)
    assert result is not None
    return result


def _run(name: str, counts: list[int], members: list[str], owners: np.ndarray | None, prev: list[str]) -> np.ndarray:
    f = _sticky if "sticky" in name else _server
    return f(name, counts, members, owners, prev)


def _spreads(owners: np.ndarray, counts: list[int], n: int) -> tuple[int, int]:
    per_member = np.bincount(owners[owners >= 0], minlength=n)
    worst = 0
    start = 0
    for c in counts:
        block = owners[start : start + c]
        start += c
        per = np.bincount(block[block >= 0], minlength=n)
        worst = max(worst, int(per.max() - per.min()))
    return int(per_member.max() - per_member.min()), worst


def _lower_bound(
    settled: np.ndarray, members: list[str], after: list[str], counts: list[int], base: list[int], left: str | None
) -> int:
    """Fewest old partitions any member-balanced result (max - min <= 1) must move: the leaver's
    (orphaned), plus the larger of what members hold above ``ceil(P / M)`` and what members below
    ``floor(P / M)`` (a joiner holds 0) still lack once orphaned and new partitions fill them."""
    total, m = sum(counts), len(after)
    ceil, floor = math.ceil(total / m), total // m
    held = dict(zip(members, np.bincount(settled[settled >= 0], minlength=len(members)).tolist(), strict=True))
    orphaned = held.get(left, 0) if left else 0
    shed = sum(max(0, held.get(x, 0) - ceil) for x in after)
    deficit = sum(max(0, floor - held.get(x, 0)) for x in after)
    fresh = total - sum(base)
    return orphaned + max(shed, deficit - fresh - orphaned)


def study(sizes: list[tuple[int, int, int]]) -> list[dict[str, object]]:
    global _OLD_COUNTS  # noqa: PLW0603 - the layout _reblock maps from, set per event
    rows: list[dict[str, object]] = []
    for partitions, n, n_topics in sizes:
        base = [partitions // n_topics] * n_topics
        base[0] += partitions - sum(base)
        members = [f"m{i}" for i in range(n)]
        bounds: dict[str, int] = {}
        for name in ASSIGNORS:
            _OLD_COUNTS = base
            settled = _run(name, base, members, None, members)
            for event in EVENTS:
                counts, after = list(base), list(members)
                left = None
                if event == "join":
                    after = [*members, "joined"]
                elif event == "leave":
                    left = members[n // 2]
                    after = [m for m in members if m != left]
                else:
                    counts[0] += max(1, counts[0] // 4)
                _OLD_COUNTS = base
                t0 = time.perf_counter()
                new = _run(name, counts, after, settled, members)
                elapsed = time.perf_counter() - t0
                old_ids = np.array(members + ["-"], dtype=object)[settled]
                new_laid = _reblock(np.arange(len(settled)), counts)  # old partition k sits at new_laid==k
                keep = new_laid >= 0
                new_ids = np.array(after + ["-"], dtype=object)[new]
                moved = int(np.sum(old_ids[new_laid[keep]] != new_ids[keep]))
                if name == "uniform":  # the bound from a balanced start, the same for every row
                    bounds[event] = _lower_bound(settled, members, after, counts, base, left)
                lower = bounds[event]
                ms, ts = _spreads(new, counts, len(after))
                rows.append({
                    "partitions": partitions, "members": n, "topics": n_topics, "event": event,
                    "assignor": name, "moved": moved, "lower_bound": lower,
                    "member_spread": ms, "topic_spread": ts, "seconds": round(elapsed, 4),
                })  # fmt: skip
                print(rows[-1], flush=True)
    return rows


def _plot(rows: list[dict[str, object]], path: Path) -> None:
    import matplotlib  # noqa: PLC0415 - plotting is optional for the study

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(1, len(EVENTS), figsize=(15, 4.5), sharey=True)
    for ax, event in zip(axes, EVENTS, strict=True):
        sel = [r for r in rows if r["event"] == event]
        sizes = sorted({int(r["partitions"]) for r in sel})  # type: ignore[call-overload]
        for name in ASSIGNORS:
            ys = [
                max(1, int(next(r["moved"] for r in sel if r["assignor"] == name and r["partitions"] == s)))
                for s in sizes
            ]  # type: ignore[call-overload]
            ax.plot(sizes, ys, marker="o", label=name)
        lb = [max(1, int(next(r["lower_bound"] for r in sel if r["partitions"] == s))) for s in sizes]  # type: ignore[call-overload]
        ax.plot(sizes, lb, "k--", label="lower bound")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"one {event}")
        ax.set_xlabel("partitions (members = partitions / 10, 8 at 64)")
    axes[0].set_ylabel("partitions moved (log; 0 drawn as 1)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benches/kafka_server_results")
    ap.add_argument("--max-partitions", type=int, default=100_000)
    args = ap.parse_args()
    rows = study([s for s in SIZES if s[0] <= args.max_partitions])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "movement.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    keys = ["partitions", "members", "event", "assignor", "moved", "lower_bound", "member_spread", "topic_spread"]
    md = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    md += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    (out / "movement.md").write_text("\n".join(md) + "\n")
    _plot(rows, out / "movement.png")


if __name__ == "__main__":
    main()
