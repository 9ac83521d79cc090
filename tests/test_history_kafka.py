"""``mqbalance history`` on Kafka histories: datasets written through the real writer by a small
watcher model (:class:`Watcher`: per tick the changes of groups, members, ownership and offsets,
or a checkpoint of everything, as the Kafka watcher writes them per the dataset contract), with
planted churn — classic joins, a graceful leave, a ``kill -9`` expiry, a static restart within the
session timeout, a shared instance id, a generation jump of 3, a consumer-protocol group through
Assigning and Reconciling, a partition added, a group appearing, a flapping client. The expected
episodes, counts and causes come from the plan, not from the analysis; in process and on Spark,
whole and a span at a time, the results are equal."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kafka_cluster import MQBALANCE
from mqbalance.fleet.spark import local_session, stop_session
from mqbalance.history.job import analyse
from mqbalance.history.report import write_history_outputs
from mqbalance.history.writer import HistoryWriter

pytestmark = pytest.mark.java

T0 = dt.datetime(2026, 11, 25, 1, 0, tzinfo=dt.UTC)
HOST = "/127.0.0.1"


class Watcher:
    """The state of a Kafka cluster's groups, written as the watcher writes it: each
    :meth:`tick` the changes since the last one (``appear``/``disappear``/``state``/
    ``subscription`` groups rows carrying every current value, member ``join``/``leave``/``epoch``,
    ownership ``change``/``remove``, offsets ``change`` at offsets ticks), or a checkpoint."""

    def __init__(self, root: Path) -> None:
        self.w = HistoryWriter(root, run_id="plan", kind="kafka")
        self.groups: dict[str, dict[str, Any]] = {}
        self.members: dict[tuple[str, str], dict[str, Any]] = {}
        self.owners: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.offsets: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.seen: dict[str, dict[Any, dict[str, Any]]] = {"groups": {}, "members": {}, "ownership": {}, "offsets": {}}
        self.tick_id = 0

    def group(self, g: str, **values: Any) -> None:
        base = {"group_type": "classic", "protocol_type": "consumer", "subscriptions": ["t"], "strategy": "range"}
        self.groups[g] = {**base, **self.groups.get(g, {}), **values, "group": g}

    def join(self, g: str, member_id: str, client_id: str, instance_id: str | None = None, epoch: int | None = None):
        self.members[(g, member_id)] = {
            "group": g, "member_id": member_id, "client_id": client_id, "client_addr": HOST,
            "instance_id": instance_id, "member_epoch": epoch,
        }  # fmt: skip

    def leave(self, g: str, member_id: str) -> None:
        del self.members[(g, member_id)]

    def own(self, g: str, topic: str, owners: dict[int, str | None]) -> None:
        for p, owner in owners.items():
            self.owners[(g, topic, p)] = {
                "group": g, "topic": topic, "broker_name": "", "queue_id": p, "owner": owner,
                "processes": int(owner is not None),
            }  # fmt: skip

    def offset(self, g: str, topic: str, p: int, committed: int, end: int) -> None:
        self.offsets[(g, topic, p)] = {
            "group": g, "topic": topic, "broker_name": "", "queue_id": p, "committed": committed, "max_offset": end,
            "lag_time": "exact" if end > committed else None, "timestamp_type": "CreateTime",
        }  # fmt: skip

    def tick(self, s: int, *, checkpoint: bool = False, offsets: bool = False) -> None:
        now = {"groups": self.groups, "members": self.members, "ownership": self.owners}
        if offsets or checkpoint:
            now = {**now, "offsets": self.offsets}
        events: dict[str, list[dict[str, Any]]] = {}
        for name, state in now.items():
            seen = self.seen[name]
            rows: list[dict[str, Any]] = []
            if checkpoint:
                rows = [{**r, "event": "checkpoint"} for r in state.values()]
            else:
                for key, r in state.items():
                    old = seen.get(key)
                    if old == r:
                        continue
                    if name == "groups":
                        event = "appear" if old is None else "state"
                        if old is not None and all(old[k] == r[k] for k in ("state", "generation", "assignment_epoch")):
                            event = "subscription"
                    elif name == "members":
                        event = "join" if old is None else "epoch"
                    else:
                        event = "change"
                    rows.append({**r, "event": event})
                for key in seen.keys() - state.keys():
                    gone = {"groups": "disappear", "members": "leave", "ownership": "remove"}[name]
                    rows.append({**seen[key], "event": gone})
            self.seen[name] = {k: dict(v) for k, v in state.items()}
            events[name] = rows
        self.tick_id += 1
        self.w.commit_tick(
            self.tick_id,
            T0 + dt.timedelta(seconds=s),
            events,
            {"kind": "both" if offsets else "membership", "checkpoint": checkpoint, "duration_ms": 5,
             "skipped_before": 0, "clock_jump_ms": 0, "groups": len(self.groups), "changed_groups": 1, "requests": 4,
             "errors": 0},
        )  # fmt: skip


#: seconds of the planted checkpoints beside the first: one in the middle of a consumer-protocol
#: rebalance (gk Reconciling at 301), one between two replacements of a shared instance id
CHECKPOINTS = {0, 301, 615}


def plan(w: Watcher, s: int) -> None:
    """The planted churn at second ``s`` (see the expectations in the tests)."""
    gc, gk = "gc", "gk"
    if s == 0:
        w.group(gc, state="Stable", generation=1)
        for mid, cid, iid in (("m1", "c1", None), ("m2", "c2", None), ("m4", "c4", "s1")):
            w.join(gc, mid, cid, iid)
        w.own(gc, "t", {0: "m1", 1: "m1", 2: "m2", 3: "m2"})
        w.group(gk, group_type="consumer", state="Stable", generation=3, assignment_epoch=3, subscriptions=["u"],
                strategy="uniform")  # fmt: skip
        w.join(gk, "k1", "k1", epoch=3)
        w.own(gk, "u", {0: "k1", 1: "k1"})
    # gc: classic group
    elif s == 100:  # c3 joins: the group prepares a rebalance, no assignment is described meanwhile
        w.join(gc, "m3", "c3")
        w.group(gc, state="PreparingRebalance")
        w.own(gc, "t", dict.fromkeys(range(4)))
    elif s == 102:
        w.group(gc, state="CompletingRebalance", generation=2)
    elif s == 103:
        w.group(gc, state="Stable")
        w.own(gc, "t", {0: "m1", 1: "m2", 2: "m3", 3: "m3"})
    elif s == 200:  # c3 leaves gracefully: its partitions committed up to the end
        w.leave(gc, "m3")
        w.group(gc, state="PreparingRebalance")
        w.own(gc, "t", dict.fromkeys(range(4)))
    elif s == 201:  # CompletingRebalance between two ticks
        w.group(gc, state="Stable", generation=3)
        w.own(gc, "t", {0: "m1", 1: "m2", 2: "m1", 3: "m2"})
    elif s == 310:  # c2 was killed at 290: its partitions stopped committing; its session expired now
        w.leave(gc, "m2")
        w.group(gc, state="PreparingRebalance")
        w.own(gc, "t", dict.fromkeys(range(4)))
    elif s == 311:
        w.group(gc, state="Stable", generation=4)
        w.own(gc, "t", dict.fromkeys(range(4), "m1"))
    elif s == 400:  # static member s1 restarted within its session timeout: new member id, no rebalance
        w.leave(gc, "m4")
        w.join(gc, "m5", "c4", "s1")
    elif s == 500:  # three rebalances between two ticks
        w.group(gc, generation=7)
    elif s == 600:  # c7 joins with instance id s2 ...
        w.join(gc, "m7", "c7", "s2")
        w.group(gc, state="PreparingRebalance")
    elif s == 601:  # Stable before its generation is read (the coordinator's record a tick later)
        w.group(gc, state="Stable")
    elif s == 602:
        w.group(gc, generation=8)
    elif s in (610, 620, 630):  # ... and a second process with s2 takes it, again and again
        old, new = {610: ("m7", "m8"), 620: ("m8", "m9"), 630: ("m9", "m10")}[s]
        w.leave(gc, old)
        w.join(gc, new, "c7" if s != 620 else "c7b", "s2")
        if s == 620:  # this time the broker rebalanced
            w.group(gc, generation=9)
    # gk: consumer-protocol group
    if s == 100:
        w.join(gk, "k2", "k2", epoch=3)
        w.group(gk, state="Reconciling", generation=4, assignment_epoch=4)
        w.own(gk, "u", {1: None})
    elif s == 102:
        w.group(gk, state="Stable")
        w.own(gk, "u", {1: "k2"})
    elif s == 200:
        w.join(gk, "k3", "k3", epoch=4)
        w.group(gk, state="Reconciling", generation=5, assignment_epoch=5)
    elif s == 201:
        w.join(gk, "k4", "k4", epoch=5)
        w.group(gk, generation=6, assignment_epoch=6)
    elif s == 203:
        w.group(gk, state="Stable")
    elif s == 300:
        w.leave(gk, "k4")
        w.group(gk, state="Assigning", generation=7)
    elif s == 301:
        w.group(gk, state="Reconciling", assignment_epoch=7)
    elif s == 302:
        w.group(gk, state="Stable")
    elif s == 400:  # a partition added to u: the group epoch moves
        w.group(gk, generation=8, assignment_epoch=8)
        w.own(gk, "u", {2: "k1"})
    # gn: appears, its generation 2 known two seconds later; f joins and leaves three times, a new member id each time
    if s == 50:  # a classic group's generation is unknown (null) until the coordinator records one
        w.group("gn", state="PreparingRebalance", generation=None, subscriptions=["v"])
        w.join("gn", "j1", "j1")
    elif s == 52:
        w.group("gn", state="Stable", generation=2)
    elif s == 650:  # j2 joins; the group is Stable at 651 before its generation's record is read ...
        w.join("gn", "j2", "j2")
        w.group("gn", state="PreparingRebalance")
    elif s == 651:
        w.group("gn", state="Stable")
    elif s == 652:  # ... and j2 leaves before that: both generations come at 653
        w.leave("gn", "j2")
        w.group("gn", state="PreparingRebalance")
    elif s == 653:
        w.group("gn", state="Stable", generation=4)
    elif s in (700, 720, 740):
        w.join("gn", f"f-{s}", "f")
        w.group("gn", generation=w.groups["gn"]["generation"] + 1)
    elif s in (710, 730, 750):
        w.leave("gn", f"f-{s - 10}")
        w.group("gn", generation=w.groups["gn"]["generation"] + 1)


def offsets(w: Watcher, s: int) -> None:
    """gc's partitions: 10 records every 2 s each; p0 consumed to the end, the others 5 behind;
    p1 and p3 (c2's since 201) frozen from 290 (c2 killed) to the end."""
    end = 10 * (s // 2)
    w.offset("gc", "t", 0, end, end)
    for p in (1, 2, 3):
        frozen = p in (1, 3) and s >= 290
        w.offset("gc", "t", p, 10 * (290 // 2) - 5 if frozen else end - 5, end)


def reading(s: int) -> bool:
    """Offsets are read every 2 s around the leave at 200 and the expiry at 310, else every 20 s."""
    return s % 2 == 0 and (180 <= s <= 320 or s % 20 == 0)


def write_plan(root: Path) -> Path:
    w = Watcher(root)
    for s in range(801):
        planted = s in (0, 50, 52, 100, 102, 103, 200, 201, 203, 300, 301, 302, 310, 311, 400, 500, 600, 601, 602,
                        610, 620, 630, 650, 651, 652, 653, 700, 710, 720, 730, 740, 750)  # fmt: skip
        if planted or reading(s) or s in CHECKPOINTS:
            plan(w, s)
            if reading(s):
                offsets(w, s)
            w.tick(s, checkpoint=s in CHECKPOINTS, offsets=reading(s))
    w.w.close()
    return root


def at(e: dict[str, Any]) -> float:
    return (dt.datetime.fromisoformat(e["start"]) - T0).total_seconds()


@pytest.fixture(scope="module")
def spark() -> Any:
    session = local_session(fast_start=True, driver_memory="1g")
    yield session
    stop_session(session)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_plan(tmp_path_factory.mktemp("kafka") / "h")


@pytest.fixture(scope="module")
def result(planted: Path) -> Any:
    return analyse(None, planted, window=60, min_cycles=3, min_episodes=5)


def episodes(result: Any, group: str) -> dict[float, dict[str, Any]]:
    return {at(e): e for e in result.episodes if e["group"] == group}


def test_rebalance_count_is_the_sum_of_generation_increments(result: Any) -> None:
    """A jump from 4 to 7 counts 3; a group appearing, then known at generation 2, counts 2; the static restart
    within the session timeout counts nothing."""
    counts = {g["group"]: (g["rebalances"], g["episodes"], g["generation"], g["state"]) for g in result.groups}
    assert counts == {
        "gc": (1 + 1 + 1 + 3 + 1 + 1, 6, 9, "Stable"),
        "gk": (5, 5, 8, "Stable"),
        "gn": (2 + 2 + 6, 1 + 2 + 6, 10, "Stable"),
    }
    for g in result.groups:  # the episodes' rebalances add up to the group's count
        assert sum(e["rebalances"] for e in result.episodes if e["group"] == g["group"]) == g["rebalances"]


def test_classic_episodes_name_members_times_and_causes(result: Any) -> None:
    gc = episodes(result, "gc")
    assert sorted(gc) == [100, 200, 310, 500, 600, 620]  # nothing at 400 (static restart), 610, 630
    join = gc[100]
    assert (join["generation_from"], join["generation_to"], join["rebalances"]) == (1, 2, 1)
    assert join["states"] == ["PreparingRebalance", "CompletingRebalance", "Stable"]
    assert join["rebalancing_s"] == 3.0 and join["owned_again_s"] == 3.0 and join["unowned_queue_s"] == 4 * 3.0
    assert join["joined"] == [["c3", HOST, "m3", None]] and join["left"] == []
    assert join["causes"] == [f"joined: c3 ({HOST}, member m3)"]
    assert gc[200]["causes"] == [f"left: c3 ({HOST}, member m3)"] and gc[200]["rebalancing_s"] == 1.0
    # c2 killed at 290: no commit on its lagging partitions at the 2 readings of the 4 s before its removal
    assert gc[310]["causes"] == [
        f"vanished: c2 ({HOST}, member m2): no commit at 2 offsets readings over 4 s on its lagging partitions"
    ]
    # three generations with no change seen: said so, with the static replacement before them (at 400)
    assert gc[500]["rebalances"] == 3 and gc[500]["rebalancing_s"] == 0.0
    assert gc[500]["causes"] == [
        "generation advanced with no membership change seen between ticks",
        f"static member replaced 100 s before: instance s1, member m4 -> c4 ({HOST}, member m5, instance s1)",
    ]
    assert gc[600]["causes"] == [f"joined: c7 ({HOST}, member m7, instance s2)"]
    assert (gc[600]["rebalances"], gc[600]["rebalancing_s"], gc[600]["generation_to"]) == (1, 1.0, 8)
    assert gc[620]["causes"] == [
        f"fenced: instance s2, member m8 replaced by c7b ({HOST}, member m9, instance s2)",
        "shared instance id: s2",
    ]
    assert gc[620]["joined"] == [] and gc[620]["left"] == []


def test_static_replacements_and_shared_instance_ids(result: Any) -> None:
    fenced = [(f["group"], f["instance_id"], f["member_id"], f["by_member_id"], f["rebalances"]) for f in result.fenced]
    assert fenced == [
        ("gc", "s1", "m4", "m5", 0),
        ("gc", "s2", "m7", "m8", 0),
        ("gc", "s2", "m8", "m9", 1),
        ("gc", "s2", "m9", "m10", 0),
    ]
    shared = [(d["group"], d["client_id"], d["addresses"], d["how"]) for d in result.duplicate_ids]
    assert shared == [("gc", "s2", ["m10", "m7", "m8", "m9"], "alternating")]


def test_consumer_protocol_episodes_keep_the_brokers_states(result: Any) -> None:
    gk = episodes(result, "gk")
    assert sorted(gk) == [100, 200, 201, 300, 400]
    assert gk[100]["states"] == ["Reconciling", "Stable"] and gk[100]["rebalancing_s"] == 2.0
    assert gk[100]["causes"] == [f"joined: k2 ({HOST}, member k2)"] and gk[100]["owned_again_s"] == 2.0
    assert gk[200]["rebalancing_s"] is None  # another epoch came before it settled
    assert gk[201]["states"] == ["Reconciling", "Stable"] and gk[201]["rebalancing_s"] == 2.0
    assert gk[300]["states"] == ["Assigning", "Reconciling", "Stable"] and gk[300]["rebalancing_s"] == 2.0
    assert gk[300]["causes"] == [f"left: k4 ({HOST}, member k4)"]
    assert gk[400]["causes"] == ["partitions added: u (1)"]
    assert {e["group_type"] for e in gk.values()} == {"consumer"}


def test_appearing_group_and_flapping_client(result: Any) -> None:
    gn = episodes(result, "gn")
    assert (
        gn[50]["rebalances"] == 2
        and gn[50]["generation_from"] == 0
        and gn[50]["causes"] == [f"joined: j1 ({HOST}, member j1)"]
    )
    # a rebalance that starts before the last one's generation is read is an episode of its own
    assert [(gn[t]["rebalances"], gn[t]["generation_to"], gn[t]["rebalancing_s"]) for t in (650, 652)] == [
        (1, 3, 1.0),
        (1, 4, 1.0),
    ]
    assert gn[650]["causes"] == [f"joined: j2 ({HOST}, member j2)"] and gn[652]["causes"] == [
        f"left: j2 ({HOST}, member j2)"
    ]
    assert [(f["group"], f["client_id"], f["cycles"]) for f in result.flapping_clients] == [("gn", "f", 3)]
    assert {g["group"] for g in result.flapping_groups} == {"gc", "gk", "gn"}


def test_partition_health_by_burrows_rules(result: Any) -> None:
    status = {(h["group"], h["queue_id"]): (h["status"], h["lag"]) for h in result.health}
    assert status[("gc", 0)] == ("OK", 0)
    assert status[("gc", 1)] == ("STALL", 10 * 400 - (10 * 145 - 5))


def test_in_process_spans_and_spark_give_the_same_results(spark: Any, planted: Path, result: Any) -> None:
    """Spans of 37 s cut episodes between their start and their generation change or settling,
    and start after the checkpoints at 301 and 615; on Spark (the same per-group function: one span
    here, each run of it costs Spark jobs per table) the same."""
    assert analyse(None, planted, window=60, min_cycles=3, min_episodes=5, span=dt.timedelta(seconds=37)) == result
    assert analyse(spark, planted, window=60, min_cycles=3, min_episodes=5) == result


def test_report_names_members_and_causes(planted: Path, result: Any, tmp_path: Path) -> None:
    paths = write_history_outputs(result, tmp_path / "out", root=planted)
    report = paths["report_md"].read_text()
    assert "## Rebalances per group" in report and "| gc | classic | Stable | 9 | 8 | 6 |" in report
    assert f"vanished: c2 ({HOST}, member m2)" in report and "c3 (/127.0.0.1, member m3)" in report
    assert "| gc | s1 | m4 (c4) | m5 (c4) |" in report
    assert (tmp_path / "out" / "ownership.png").stat().st_size > 0


def test_history_cli_on_a_kafka_history(planted: Path, tmp_path: Path) -> None:
    got = subprocess.run(
        [str(MQBALANCE), "history", str(planted), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert got.returncode == 0, got.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["rebalances"] == {"gc": 8, "gk": 5, "gn": 10} and summary["episodes"] == 20
