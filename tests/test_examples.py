"""The two-broker latency experiment (producer fault isolation) and the CLI."""

from __future__ import annotations

import subprocess
import sys

from mqbalance.cli import main
from mqbalance.fault import demo as fault_latency_demo

# The recorded output of the Java experiment (a producer with the pre-4.9 selection loop).
RECORDED_SUCCESS = [["broker1"], ["broker2"]] + [["broker1"]] * 8
RECORDED_FAILURE = [["broker1", "broker1"], ["broker2", "broker1"]] + [["broker1", "broker1"]] * 8


def test_pre_4_9_loop_reproduces_the_recorded_java_output():
    assert fault_latency_demo.run("pre-4.9", fail=False) == RECORDED_SUCCESS
    assert fault_latency_demo.run("pre-4.9", fail=True) == RECORDED_FAILURE
    assert fault_latency_demo.RECORDED_SUCCESS == RECORDED_SUCCESS
    assert fault_latency_demo.RECORDED_FAILURE == RECORDED_FAILURE


def test_rocketmq_4_9_differs_only_where_the_probe_changed():
    """4.9.8: the success run is the recorded one. When everything fails, round 0's retry goes to
    the still-available broker2 (the probe no longer demands broker == lastBrokerName); from then on
    both brokers are isolated and pickOneAtLeast prefers broker1 (30 s < 50 s)."""
    assert fault_latency_demo.run("4.x", fail=False) == RECORDED_SUCCESS
    assert fault_latency_demo.run("4.x", fail=True) == [["broker1", "broker2"]] + [["broker1", "broker1"]] * 9


def test_5x_never_retries_on_the_broker_that_just_failed():
    for attempts in fault_latency_demo.run("5.x", fail=True):
        assert attempts[0] != attempts[1]


def test_cli_fault_latency_demo_and_its_module_entry_point(capsys):
    assert main(["fault-latency-demo", "--rounds", "3"]) == 0
    out = capsys.readouterr().out
    assert "pickOneAtLeast" in out and "broker2,broker1" in out and "Java (recorded)" in out
    main_help = subprocess.run(
        [sys.executable, "-m", "mqbalance.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "fault-latency-demo" in main_help and "fault-seed" not in main_help
    done = subprocess.run(
        [sys.executable, "-m", "mqbalance.fault.demo", "--rounds", "2"], capture_output=True, text=True, check=True
    )
    assert "every send fails" in done.stdout


def test_cli_assign_on_the_bundled_example(capsys):
    assert main(["assign", "--fail-on-unowned"]) == 3  # the example has a duplicated id and a mixed group
    text = capsys.readouterr().out
    dup = next(line for line in text.splitlines() if line.startswith("cg-payments-dup"))
    queues, processes, unowned = (int(x) for x in (dup.split()[2], dup.split()[3], dup.split()[6]))
    # AVG over 4 connections, two of them one id: the duplicate's slot (a quarter) is stranded.
    assert processes == 4 and unowned == queues // 4 and "duplicated id" in dup
    assert "missing route" in next(line for line in text.splitlines() if line.startswith("cg-ghost"))


def test_cli_reports_bad_snapshots(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"topics": {"T": {"queueDatas": [{"brokerName": "b", "readQueueNums": -1, "writeQueueNums": 1, '
        '"perm": 6}]}}, "groups": {}}'
    )
    assert main(["assign", str(bad)]) == 2
    assert "readQueueNums: must be >= 0" in capsys.readouterr().err
