"""The hand-written ``_core.pyi`` matches the compiled extension, and the package type-checks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_core_stub_matches_the_binary():
    allowlist = Path(__file__).with_name("stubtest_allowlist.txt")  # only pyo3's generated __all__
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "mqbalance._core", "--allowlist", str(allowlist)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_ring_hash_is_rocketmq_md5():
    import hashlib

    from mqbalance import _core

    key = "MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]"
    assert _core.ring_hash(key) == int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "big")
    assert _core.ring_hash("é", "ISO-8859-1") == int.from_bytes(hashlib.md5(b"\xe9").digest()[:4], "big")
    assert _core.ring_hash("😀", "US-ASCII") == int.from_bytes(hashlib.md5(b"?").digest()[:4], "big")
