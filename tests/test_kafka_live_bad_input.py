"""Bad input to ``mqbalance kafka-consume`` and its member: one clear line, before anything runs."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_cluster import MQBALANCE
from mqbalance.exceptions import InvalidInputError, RemotingConnectError
from mqbalance.kafka.member import KafkaMemberConfig, check_bootstrap, run_kafka_member
from server_process import free_port


def test_unreachable_bootstrap_is_one_line_within_the_timeout(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    record = tmp_path / "m.jsonl"
    t0 = time.monotonic()
    done = subprocess.run(
        [str(MQBALANCE), "kafka-consume", "--bootstrap", f"127.0.0.1:{port}", "--group", "g", "--topic", "t"]
        + ["--record", str(record)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    took = time.monotonic() - t0
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    expected = f"mqbalance: error: no Kafka broker answered at 127.0.0.1:{port} within 5 s (127.0.0.1:{port}: "
    assert lines == [expected + "Connection refused)"], done.stderr
    assert not record.exists()
    print(f"\nunreachable bootstrap reported in {took:.2f} s")


def test_a_listener_that_never_answers_is_reported_after_the_timeout(tmp_path: Path) -> None:
    """A socket that accepts connections and says nothing (a Kafka port behind a dead process)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        cfg = KafkaMemberConfig(f"127.0.0.1:{port}", "g", ["t"], tmp_path / "m.jsonl", connect_timeout=1.0)
        t0 = time.monotonic()
        with pytest.raises(RemotingConnectError, match=rf"no Kafka broker answered at 127\.0\.0\.1:{port} within 1 s"):
            run_kafka_member(cfg, install_signals=False)
        took = time.monotonic() - t0
    assert took < 10, took
    assert not cfg.records.exists()
    print(f"\nsilent listener reported in {took:.2f} s")


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"assignor": "uniform"}, "'uniform'"),
        ({"implementation": "java"}, "'java'"),
        ({"topics": []}, "[]"),
        ({"topics": [""]}, "['']"),
        ({"session_timeout_ms": 0}, "session_timeout_ms"),
        ({"heartbeat_interval_ms": True}, "heartbeat_interval_ms"),
        ({"duration": -1.0}, "duration"),
        ({"connect_timeout": 0}, "connect_timeout"),
    ],
)
def test_member_settings_are_checked(fields: dict[str, object], named: str, tmp_path: Path) -> None:
    base: dict[str, object] = {"bootstrap": "127.0.0.1:9092", "group": "g", "topics": ["t"], "records": tmp_path / "r"}
    with pytest.raises(InvalidInputError) as e:
        KafkaMemberConfig(**{**base, **fields})  # type: ignore[arg-type]
    assert named in str(e.value)


@pytest.mark.parametrize("bootstrap", ["localhost", "127.0.0.1:", ":9092", "127.0.0.1:x"])
def test_bootstrap_must_be_host_port(bootstrap: str) -> None:
    with pytest.raises(InvalidInputError, match="HOST:PORT"):
        check_bootstrap(bootstrap, 1.0)


def test_bad_assignor_on_the_command_line_is_refused_by_the_parser() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mqbalance.cli", "kafka-consume", "--bootstrap", "x:1", "--group", "g", "--topic", "t"]
        + ["--assignor", "uniform"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "invalid choice: 'uniform'" in done.stderr
