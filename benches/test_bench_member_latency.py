"""Keeps ``member_latency.py`` (a member's rebalance latency after the broker's notification, a
script: see its docstring and the README) working: one join against a real broker.
Timing is the script's business, not this test's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import member_latency  # noqa: E402


def test_member_latency_smoke(tmp_path: Path) -> None:
    assert member_latency.main(["--rounds", "1", "--queues", "4", "--out", str(tmp_path)]) == 0
    row = json.loads((tmp_path / "member_latency.json").read_text())
    assert row["samples"] == 1 and row["notified_to_rebalanced_ms_median"] > 0
    assert row["consumer_list_round_trip_ms_median"] > 0
