"""Broker-side (KIP-848) ``uniform`` / ``range``: ``server_assign`` (dicts in and out) and
``server_assign_columns`` against a straightforward pure-Python transcription of the same Java
algorithm (``tests/support/kafka_server_reference.py``), same inputs, same run — the baseline a fresh
machine has. The side-by-side against Kafka's own Java classes is ``kafka_server_vs_java.py``
(``make bench-kafka-server``; its Java side is ``ServerAssignorBench`` of the ``kafka`` module of
``tests/java``), with its committed results in ``kafka_server_results/``; its small version here
(``test_java_bench_harness_answers_rounds``, marker ``java``) runs that harness on a small group.

Sizes: Kafka's benchmark shape (10 partitions per member, homogeneous for ``uniform``, 5
subscription buckets for ``range``); 10,000 members over 100 topics when timing, 500 otherwise.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kafka_server_reference as reference
import kafka_server_vs_java as vs_java
from kafka_server_groups import build
from mqbalance.kafka import server_assign, server_assign_columns

BASELINE = {"uniform": reference.uniform, "range": reference.range_}


def _group(name: str, full_size: bool, incremental: bool):
    return build(
        members=10_000 if full_size else 500,
        ratio=10,
        topics=100 if full_size else 10,
        heterogeneous=name == "range",
        incremental=incremental,
        name=name,
    )


def _same(ours, base) -> None:
    assert ours == base


@pytest.mark.parametrize("incremental", [False, True], ids=["full", "incremental"])
@pytest.mark.parametrize("name", ["uniform", "range"])
def test_server_assign_dict_vs_python_transcription(compare, full_size, name, incremental):
    g = _group(name, full_size, incremental)
    compare(
        lambda: server_assign(name, g.dicts, g.topics),
        lambda: BASELINE[name](g.dicts, g.topics),
        check=_same,
        label="pure-Python transcription",
    )


@pytest.mark.parametrize("incremental", [False, True], ids=["full", "incremental"])
@pytest.mark.parametrize("name", ["uniform", "range"])
def test_server_assign_columns_vs_python_transcription(compare, full_size, name, incremental):
    g = _group(name, full_size, incremental)
    cols = g.columns()

    def check(owners: np.ndarray, base) -> None:
        k = 0
        got: dict[str, dict[str, list[int]]] = {m: {} for m in g.members}
        for t, c in zip(g.topic_ids, g.counts.tolist(), strict=True):
            for p in range(c):
                if owners[k] >= 0:
                    got[g.members[owners[k]]].setdefault(t, []).append(p)
                k += 1
        assert got == base

    compare(
        lambda: server_assign_columns(name, **cols),
        lambda: BASELINE[name](g.dicts, g.topics),
        check=check,
        label="pure-Python transcription",
    )


@pytest.mark.java
@pytest.mark.parametrize("incremental", [False, True], ids=["full", "incremental"])
@pytest.mark.parametrize("name", ["uniform", "range"])
def test_java_bench_harness_answers_rounds(tmp_path, name, incremental):
    """The Java side of ``kafka_server_vs_java.py`` on a small group: Kafka's assignor, fed the
    group through ``_tokens``, assigns every partition in each round it is asked for; the
    columnar floor helper answers too."""
    g = build(members=40, ratio=3, topics=6, heterogeneous=name == "range", incremental=incremental, name=name)
    java = vs_java.JavaSide(g, 128, tmp_path / "java.log")
    try:
        times, assigned = java.rounds(3)
    finally:
        java.stop()
    assert len(times) == 3 and all(t > 0 for t in times)
    assert (
        assigned
        == int(g.counts.sum())
        == sum(len(ps) for d in server_assign(name, g.dicts, g.topics).values() for ps in d.values())
    )
    if getattr(vs_java._core, "_bench", None) is not None:
        assert vs_java.floor(g.columns()) > 0


@pytest.mark.java
def test_java_bench_times_every_side_of_a_point(tmp_path):
    """``kafka_server_vs_java.py`` itself on one small point: every side (Java, ours, the floors)
    timed in each round, whatever position the rotation gives it."""
    script = Path(vs_java.__file__)
    done = subprocess.run(
        [sys.executable, str(script), "--only", "uniform/100/hom/inc", "--members", "200", "--ratio", "2",
         "--warmup", "1", "--rounds", "5", "--heap-mb", "128", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [ast.literal_eval(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert len(rows) == 1, done.stderr
    row = rows[0]
    assert (row["assignor"], row["topics"], row["assignment"]) == ("uniform", 100, "incremental"), row
    for side in ("java_ms", "columns_ms", "dict_ms", "build_ms", "floor_ms", "dict_floor_ms"):
        assert row[side] >= 0, (side, row)
    assert row["dict_over_floor"] > 0 and row["columns_speedup"] > 0, row
    assert not list(tmp_path.iterdir()), "a partial run (--only) leaves the results alone"
