"""Keeps ``coordination_bench.py`` (the ZooKeeper group benchmark, a script: see its docstring and
the README) working: a tiny run — 3 members, 48 queues, two configurations — against a real
ZooKeeper. Timing is the script's business, not this test's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import coordination_bench  # noqa: E402


def test_coordination_bench_smoke(tmp_path: Path) -> None:
    argv = ["--sizes", "3", "--queues", "48", "--configs", "every-member/AVG,leader/sticky"]
    assert coordination_bench.main([*argv, "--backoff-ms", "200", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "results.json").read_text())
    assert len(rows) == 6 and all(r["stable_s"] is not None for r in rows)
    every = {r["change"]: r for r in rows if r["mode"] == "every-member"}
    leader = {r["change"]: r for r in rows if r["mode"] == "leader"}
    assert every["join"]["released"] >= 48  # every-member stops the world (more on a retry)
    assert leader["join"]["released"] < 48 and leader["join"]["requests"] < every["join"]["requests"]
    assert (tmp_path / "table.md").read_text().startswith("| mode |")
