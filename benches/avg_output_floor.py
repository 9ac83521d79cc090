"""Whole-group AVG on presorted input (``bulk.owners``, 1M queues / 10k ids) against its floor, a
numpy pass writing the same 1M ``int64`` owners (issue 36: target ≤ 2.5×), interleaved round by
round with ``qids.min()`` (reading the queue ids once), medians and the spread of block medians.

    python benches/avg_output_floor.py [--rounds 400] [--blocks 4]

``benches/test_bench_allocate.py -k output_floor`` is the same comparison in 15 rounds (and its
small version in ``make test``); many short rounds move less on a loaded machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from mqbalance.allocation import bulk


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--blocks", type=int, default=4)
    args = parser.parse_args()
    n, c = 1_000_000, 10_000
    topics, brokers = ["T"] * n, ["b"] * n
    qids = np.arange(n, dtype=np.int64) % 1000
    ids = sorted(f"client-{i:05d}" for i in range(c))
    sides: dict[str, Callable[[], object]] = {
        "ours": lambda: bulk.owners("AVG", topics, brokers, qids, ids, presorted=True),
        "floor": lambda: np.full(n, -1, dtype=np.int64),
        "read": lambda: qids.min(),
    }
    want = np.repeat(np.arange(c, dtype=np.int64), n // c)
    assert np.array_equal(bulk.owners("AVG", topics, brokers, qids, ids, presorted=True), want)
    ratios = []
    for _ in range(args.blocks):
        times: dict[str, list[float]] = {k: [] for k in sides}
        for _ in range(args.rounds):
            for k, f in sides.items():
                t = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        ratios.append(med["ours"] / med["floor"])
        print(
            f"ours {med['ours']:.3f} ms, floor (np.full) {med['floor']:.3f} ms, qids.min {med['read']:.3f} ms: "
            f"{ratios[-1]:.2f}x"
        )
    print(f"ours / floor: median {statistics.median(ratios):.2f}x, spread {min(ratios):.2f}-{max(ratios):.2f}x")


if __name__ == "__main__":
    main()
