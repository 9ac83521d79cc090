"""``mqbalance assign`` with one process per queue against one process per 100 queues, same queues
(issue 36: target ≤ 1.5×). Timing on (``make bench``): ``benches/assign_scale.py --connections``'s
measurement at 10^6 queues, 3 alternating rounds. As a plain test, 2×10^4 queues: the Rust reader
(connections straight into columns) takes the file, and gives the very snapshot the fast JSON path
(keys checked in Rust, no hook), the key-checking hook and the entry-by-entry checks give, and
both fleets go through the command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from assign_scale import HEAVY, LIGHT_QUEUES_PER_PROCESS, connections, make_json_fleet  # noqa: E402
from mqbalance import _core  # noqa: E402
from mqbalance.exceptions import SnapshotError  # noqa: E402
from mqbalance.fleet.rocketmq.assignment import assign_pair, assign_snapshot  # noqa: E402
from mqbalance.fleet.rocketmq.checks import no_duplicate_keys  # noqa: E402
from mqbalance.fleet.rocketmq.facts import busy_processes  # noqa: E402
from mqbalance.fleet.rocketmq.files import load_snapshot, parse_json  # noqa: E402
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict, snapshot_from_json_bytes  # noqa: E402
from test_snapshot_columns import entry_by_entry  # noqa: E402  (tests/ is on the path: conftest)


@pytest.mark.filterwarnings("ignore:Benchmark fixture was not used at all in this test")
def test_assign_one_process_per_queue_against_one_per_100(benchmark, record, full_size, tmp_path):
    if full_size:
        row = connections(10**6, 3, tmp_path / "out")
        record(
            row["heavy_s"],
            rounds=3,
            label=f"same queues, 1 process per {LIGHT_QUEUES_PER_PROCESS} queues (ratio {row['ratio']}x)",
            reference_s=row["light_s"],
            target_s=1.5 * row["light_s"],
        )
        return
    size = 20_000
    for name, extra in (("heavy", {}), ("light", {"processes": size // LIGHT_QUEUES_PER_PROCESS})):
        path = tmp_path / f"{name}.json"
        _, _, processes = make_json_fleet(size, path, **HEAVY, **extra)  # type: ignore[arg-type]
        text = path.read_text()
        assert _core.json_keys(text) == "distinct"
        slow = json.loads(text, object_pairs_hook=no_duplicate_keys)
        assert parse_json(text) == slow
        snap = load_snapshot(path)
        assert snapshot_from_json_bytes(path.read_bytes(), str(path)) is not None  # the reader's path
        assert snap == entry_by_entry(slow, str(path)) and snap.connections.num_rows == processes
        assert snap == snapshot_from_dict(slow, str(path))
        done = subprocess.run(
            [sys.executable, "-m", "mqbalance.cli", "assign", str(path), "--top", "3", "--quiet"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert f"{len(snap.groups)} groups" in done.stdout


@pytest.mark.parametrize(
    "text",
    [
        '{"topics": {}, "groups": {"g": {"connections": [{"clientId": "a", "clientId": "b"}]}}}',
        '{"a": 1, "\\u0061": 2}',  # the same key, one escaped: the Rust pass is unsure, the hook names it
    ],
)
def test_a_repeated_key_is_named_whichever_path_sees_it(text):
    with pytest.raises(SnapshotError, match="duplicate key"):
        parse_json(text)


def test_heavy_and_light_layouts_agree_where_they_share_consumers(tmp_path):
    """The batched assignment (a group's id list shared by its pairs, each list once in the flat
    ids) gives every queue the owner the per-pair path gives, in both layouts, over the same
    queues."""
    size = 5_000
    snaps = {}
    for name, extra in (("heavy", {}), ("light", {"processes": size // LIGHT_QUEUES_PER_PROCESS})):
        path = tmp_path / f"{name}.json"
        make_json_fleet(size, path, **HEAVY, **extra)  # type: ignore[arg-type]
        snaps[name] = load_snapshot(path)
    owners = {}
    for name, snap in snaps.items():
        table = assign_snapshot(snap)
        rows = table.to_pylist()
        owners[name] = {(r["group"], r["topic"], r["broker_name"], r["queue_id"]): r["consumer"] for r in rows}
        groups = snap.group_index()
        by_pair: dict[tuple[str, str], list[dict]] = {}
        for r in rows:
            by_pair.setdefault((r["group"], r["topic"]), []).append(r)
        for (g, t), pair_rows in by_pair.items():  # the per-pair path, one pair at a time
            qs = sorted({(r["broker_name"], r["queue_id"]) for r in pair_rows})
            idx, who = assign_pair(
                groups[g],
                pa.array([t] * len(qs)),
                pa.array([b for b, _ in qs]),
                np.array([q for _, q in qs], dtype=np.int64),
            )
            expected = sorted((qs[i], c) for i, c in zip(idx.tolist(), who))
            got = sorted(((r["broker_name"], r["queue_id"]), r["consumer"]) for r in pair_rows if r["consumer"])
            assert got == expected, (g, t)
    assert owners["heavy"].keys() == owners["light"].keys()  # the same queues, every one in both
    for key, consumer in owners["heavy"].items():  # a group of one process owns all its queues in both
        if len(snaps["light"].group_index()[key[0]].client_ids) == 1:
            assert owners["light"][key] is not None and consumer is not None


def test_busy_processes_count_each_connection_of_a_duplicated_id():
    snap = snapshot_from_dict(
        {
            "topics": {},
            "groups": {
                "dup": {
                    "subscriptions": [],
                    "connections": [{"clientId": "a"}, {"clientId": "a"}, {"clientId": "b"}, {"clientId": "c"}],
                },
                "plain": {"subscriptions": [], "connections": [{"clientId": "x"}, {"clientId": "y"}]},
            },
        }
    )
    busy = pa.table(
        {"group": ["dup", "dup", "dup", "plain", "plain"], "consumer": ["a", "b", "a", "x", "y"]},
        schema=pa.schema([("group", pa.string()), ("consumer", pa.string())]),
    )
    got = busy_processes(busy, snap.group_index()).to_pylist()
    assert sorted((r["group"], r["processes"]) for r in got) == [("dup", 3), ("plain", 2)]
