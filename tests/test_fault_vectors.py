"""Replay every producer fault-tolerance trace recorded from the real Java classes (4.9.8 and
5.3.3), step by step: results, counters and fault tables after each step."""

from __future__ import annotations

from typing import Any

import pytest

from mqbalance import MessageQueue
from mqbalance.fault import FaultItem, ManualClock, MQFaultStrategy, QueueData, ThreadLocalIndex, TopicPublishInfo
from mqbalance.versions import Semantics
from vector_cases import load_vectors

TRACES = load_vectors("rocketmq/fault.jsonl.gz")


def _mq(d: dict[str, Any]) -> MessageQueue:
    return MessageQueue(d["topic"], d["brokerName"], d["queueId"])


def _items(table: dict[str, Any], semantics: str) -> dict[str, FaultItem]:
    out = {}
    for name, v in table.items():
        if semantics == "5.x":
            out[name] = FaultItem(v["currentLatency"], v["startTimestamp"], v["reachable"], v["checkStamp"])
        else:
            out[name] = FaultItem(v["currentLatency"], v["startTimestamp"])
    return out


def _table(fs: MQFaultStrategy, semantics: str) -> dict[str, FaultItem]:
    items = fs.fault_items()
    if semantics == "5.x":
        return items
    return {k: FaultItem(v.current_latency, v.start_timestamp) for k, v in items.items()}


#: The vector files name each trace by the Java line it was recorded from.
SEMANTICS = {"4.9.x": Semantics.V4, "5.x": Semantics.V5}


def replay(trace: dict[str, Any]) -> None:
    sem = SEMANTICS[trace["semantics"]]
    cfg = trace["config"]
    init = trace["initial"]
    clock = ManualClock(init["now"])
    fs = MQFaultStrategy(
        semantics=sem,
        send_latency_fault_enable=cfg["sendLatencyFaultEnable"],
        latency_max=cfg["latencyMax"],
        not_available_duration=cfg["notAvailableDuration"],
        start_detector_enable=cfg.get("startDetectorEnable", False),
        detect_interval=cfg.get("detectInterval", 2000),
        clock=clock,
        which_item_worst=ThreadLocalIndex(initial=init.get("whichItemWorst", 0)),
    )
    queue_datas = [
        QueueData(q["brokerName"], q["perm"], q["writeQueueNums"], q["readQueueNums"]) for q in trace["queueDatas"]
    ]
    mqs = [_mq(q) for q in trace["messageQueueList"]]
    tp = TopicPublishInfo(mqs, queue_datas, send_which_queue=ThreadLocalIndex(initial=init["sendWhichQueue"]))
    rebuilt = TopicPublishInfo.from_route(mqs[0].topic, queue_datas, trace["brokersWithMaster"])
    assert rebuilt.message_queues == mqs

    for n, step in enumerate(trace["steps"]):
        op, args = step["op"], step["args"]
        where = f"{trace['id']} step {n} {op} {args}"
        result: Any = None
        if op == "advance":
            clock.advance(args["ms"])
        elif op == "update":
            fs.update_fault_item(args["broker"], args["latency"], args["isolation"], args.get("reachable", True))
        elif op == "isAvailable":
            result = fs.is_available(args["broker"])
        elif op == "isReachable":
            result = fs.is_reachable(args["broker"])
        elif op == "pickOneAtLeast":
            result = fs.pick_one_at_least()
        elif op == "select":
            result = fs.select_one_message_queue(
                tp, args["lastBrokerName"], args.get("resetIndex", False), reset_to=step.get("resetTo")
            )
        elif op == "tpSelect":
            result = tp.select_one_message_queue(None if args.get("noArg") else args["lastBrokerName"])
        elif op == "remove":
            fs.remove(args["broker"])
        elif op == "duration":
            result = fs.compute_not_available_duration(args["latency"])
        elif op == "detect":
            fs.detect_round(args["resolve"], args["detectOk"])
        else:  # pragma: no cover
            raise AssertionError(f"unknown op {op}")

        if "result" in step:
            want = step["result"]
            if op == "pickOneAtLeast" and sem == "5.x":
                assert (result is None) if not step["candidates"] else (result in step["candidates"]), where
            elif op in ("select", "tpSelect"):
                assert result == _mq(want), where
            else:
                assert result == want, where
        assert clock() == step["now"], where
        assert tp.send_which_queue.raw == step["sendWhichQueue"], where
        if "whichItemWorst" in step:
            assert fs.which_item_worst.raw == step["whichItemWorst"], where
        if "faultItems" in step:
            assert _table(fs, sem) == _items(step["faultItems"], sem), where


@pytest.mark.parametrize("trace", TRACES, ids=[t["id"] for t in TRACES])
def test_fault_trace(trace: dict[str, Any]) -> None:
    replay(trace)


def test_all_traces_present() -> None:
    assert sum(t["semantics"] == "4.9.x" for t in TRACES) == 200
    assert sum(t["semantics"] == "5.x" for t in TRACES) == 200
