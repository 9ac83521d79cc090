"""What a live ``mqbalance watch --bootstrap`` has recorded so far, and the broker's own account of
a group's rebalances, for the live Kafka history tests (``tests/test_history_kafka_live.py``,
``tests/test_history_kafka_churn_live.py``): a test waits on what the watcher recorded (never a
fixed sleep) and compares the history's rebalance count with the broker's log.

Example:
    >>> broker_generations("[GroupId g] Bumped group epoch to 7 with metadata hash 1.", "g")
    7
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from mqbalance.exceptions import MQBalanceError
from mqbalance.history.writer import read_ticks
from server_process import ServerProcess, wait_for

#: seconds to wait for anything the watcher records (the machine is shared and loaded)
WAIT_S = 120.0


def watch_process(bootstrap: str, history: Path, log: Path, *, mqbalance: Path) -> ServerProcess:
    """The ``mqbalance watch --bootstrap`` process of a test: 1 s ticks, offsets every tick."""
    argv = [str(mqbalance), "watch", "--bootstrap", bootstrap, "--out", str(history), "--interval", "1s"]
    argv += ["--offsets-interval", "1s", "--quiet"]
    return ServerProcess("mqbalance watch --bootstrap", argv, log=log)


def ticks(history: Path) -> int:
    """How many ticks the watcher has committed (0 before the first)."""
    try:
        return read_ticks(history).num_rows
    except MQBalanceError:
        return 0


def recorded(history: Path, group: str) -> tuple[dict[str, Any] | None, dict[str, dict[str, Any]]]:
    """The group's last ``groups`` row and its members (member id -> row) as the watcher has
    recorded them so far (committed ticks only: the last checkpoint, then the changes)."""
    try:
        last = max(read_ticks(history).column("tick_id").to_pylist(), default=0)
    except MQBalanceError:
        return None, {}
    rows: dict[str, list[dict[str, Any]]] = {}
    for name in ("groups", "members"):
        found = []
        for f in sorted((history / name).glob("date=*/hour=*/part-*.parquet")):
            if int(f.name[5:17]) <= last:
                found += [r for r in pq.read_table(f).to_pylist() if r["group"] == group]
        rows[name] = sorted(found, key=lambda r: r["tick_id"])
    state = rows["groups"][-1] if rows["groups"] else None
    members: dict[str, dict[str, Any]] = {}
    tick = None
    for r in rows["members"]:
        if r["event"] == "checkpoint" and r["tick_id"] != tick:
            members = {}
        tick = r["tick_id"]
        if r["event"] == "leave":
            members.pop(r["member_id"], None)
        else:
            members[r["member_id"]] = r
    return state, members


def settled(
    history: Path, group: str, clients: Iterable[str], *, group_type: str | None = None, not_ids: Iterable[str] = ()
) -> bool:
    """The watcher recorded ``group`` Stable with exactly these client ids, its generation known;
    of ``group_type`` when given, and none of its member ids in ``not_ids`` (a restarted member
    has a new member id)."""
    state, members = recorded(history, group)
    return (
        state is not None
        and state["state"] == "Stable"
        and state["generation"] is not None
        and (group_type is None or state["group_type"] == group_type)
        and sorted(m["client_id"] for m in members.values()) == sorted(clients)
        and not set(not_ids) & members.keys()
    )


def wait_settled(history: Path, group: str, clients: Iterable[str], **kwargs: Any) -> None:
    """Wait (:data:`WAIT_S`) until :func:`settled`."""
    clients = sorted(clients)
    wait_for(f"{group} Stable with {clients}", lambda: settled(history, group, clients, **kwargs), timeout=WAIT_S)


def member_ids(history: Path, group: str, client_id: str) -> set[str]:
    """The member ids the watcher last recorded for ``client_id`` in ``group``."""
    return {m for m, r in recorded(history, group)[1].items() if r["client_id"] == client_id}


def broker_generations(log: str, group: str) -> int:
    """The group's last generation (classic) or group epoch (consumer protocol) in the broker's log
    (``org.apache.kafka.coordinator.group`` at INFO). A classic group upgraded to the consumer
    protocol continues from its generation (the coordinator sets the group epoch to it), so the
    largest number is the group's count of rebalances either way."""
    g = re.escape(group)
    found = [int(n) for n in re.findall(rf"Stabilized group {g} generation (\d+)", log)]
    found += [int(n) for n in re.findall(rf"Group {g} with generation (\d+) is now empty", log)]
    found += [int(n) for n in re.findall(rf"\[GroupId {g}\] Bumped group epoch to (\d+)", log)]
    return max(found, default=0)


def stop_after_two_ticks(watch: ServerProcess, history: Path, broker_log: Path) -> str:
    """Let the watcher record two more ticks (everything so far is in the history), stop it, and
    return the broker's log up to here: members stopped after the watcher still change the groups."""
    now = ticks(history)
    wait_for("two more ticks", lambda: ticks(history) >= now + 2, timeout=WAIT_S)
    watch.stop()
    return broker_log.read_text(errors="replace")


def rebalance_counts(
    history: Path, out: Path, log: str, groups: Iterable[str], *, mqbalance: Path
) -> tuple[dict[str, int | None], dict[str, int]]:
    """Run ``mqbalance history`` on the watcher's dataset into ``out``; each group's rebalance
    count in its ``summary.json`` and the broker's (:func:`broker_generations`), side by side."""
    got = subprocess.run([str(mqbalance), "history", str(history), "--out", str(out), "--quiet"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert got.returncode == 0, got.stderr
    summary = json.loads((out / "summary.json").read_text())
    groups = list(groups)
    counted = {g: summary["rebalances"].get(g) for g in groups}
    broker = {g: broker_generations(log, g) for g in groups}
    print(f"\nrebalances: history {counted}, broker {broker}")
    assert all(broker.values()), "the broker logged no generation: see its log level"
    return counted, broker
