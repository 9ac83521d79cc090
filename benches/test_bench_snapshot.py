"""Loading a JSON snapshot: ``snapshot_from_dict`` (validated by columns, issue 24) against the
entry-by-entry validation it used before, in the same run, on the same parsed dict.

Target (issue 24): ``mqbalance assign`` under 2 s at 10^6 queues, of which the validation was
2.2 s entry by entry; here, timing on (``make bench``), a fleet of 10^6 readable queues and 139k
connections (``benches/assign_scale.py --max-consumers 1000``); as a plain test, 10^5 queues.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from assign_scale import make_json_fleet  # noqa: E402
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict  # noqa: E402
from test_snapshot_columns import entry_by_entry  # noqa: E402  (tests/ is on the path: conftest)


def test_snapshot_from_dict_by_columns_vs_entry_by_entry(compare, full_size, tmp_path):
    path = tmp_path / "fleet.json"
    make_json_fleet(10**6 if full_size else 10**5, path, max_consumers=1000)
    data = json.loads(path.read_text())

    def check(ours, baseline):
        assert ours == baseline and ours.connections.num_rows > 1000
        assert [ours._specs[c] for c in ours._spec_codes] == [baseline._specs[c] for c in baseline._spec_codes]

    compare(
        lambda: snapshot_from_dict(data, "fleet"),
        lambda: entry_by_entry(data, "fleet"),
        check=check,
        rounds=5,
        label="entry-by-entry validation (before issue 24)",
    )
