"""Peak memory of a 1M-queue / 10k-consumer bulk assignment, in a fresh interpreter.

Target (issue #2): ≤ 300 MB over the interpreter's baseline. The baseline is the peak RSS after
importing mqbalance and building the input columns; the figure is the extra peak the call adds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    import numpy as np
    from mqbalance import bulk, sort_client_ids
    n, c, name, presorted = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
    brokers = [f"broker-{k % 64:03d}" for k in range(n)]
    topics = ["TopicTest"] * n
    qids = np.arange(n, dtype=np.int64) // 64
    ids = sort_client_ids(f"10.0.{j // 256}.{j % 256}@DEFAULT" for j in range(c))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    owners = bulk.assign(name, topics, brokers, qids, ids, presorted=presorted)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"extra_mb": (after - before) / 1024, "owned": int((owners >= 0).sum())}))
    """
)


@pytest.mark.parametrize("name,presorted", [("AVG", False), ("CONSISTENT_HASH", True)])
def test_peak_memory_1m_10k(name, presorted):
    out = subprocess.run([sys.executable, "-c", SCRIPT, "1000000", "10000", name, "1" if presorted else "0"], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    print(f"{name} presorted={presorted}: +{result['extra_mb']:.0f} MB")
    assert result["owned"] == 1_000_000
    assert result["extra_mb"] <= 300
