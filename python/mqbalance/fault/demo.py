"""The two-broker latency experiment: how a RocketMQ producer with ``sendLatencyFaultEnable``
isolates slow brokers (``MQFaultStrategy`` / ``LatencyFaultTolerance``). Two brokers,
``broker1`` (every send takes 30 000 ms) and ``broker2`` (50 000 ms), 4 write queues each,
10 rounds of sending; once with every send succeeding, once with every send failing (then the
producer retries once, passing the failed broker as ``lastBrokerName``).

Run: ``mqbalance fault-latency-demo`` (or ``python -m mqbalance.fault.demo``).

Three producers are compared:

* ``pre-4.9`` — the selection loop of RocketMQ 4.x before 4.9: a probed queue is returned only if
  its broker is available **and** (``lastBrokerName`` is null **or** equals it). This reproduces
  the recorded output of the Java experiment exactly (:data:`RECORDED_SUCCESS`,
  :data:`RECORDED_FAILURE`).
* ``4.x`` — the 4.9.x line (``rocketmq-all-4.9.8``): the probe ignores ``lastBrokerName``.
* ``5.x`` — RocketMQ 5.3.3: available-and-not-last, then reachable-and-not-last, then any.

>>> run("4.x", fail=False)[:3]
[['broker1'], ['broker2'], ['broker1']]
>>> run("pre-4.9", fail=True)[:2]
[['broker1', 'broker1'], ['broker2', 'broker1']]
"""

from __future__ import annotations

import argparse
import sys

from mqbalance.allocation.models import MessageQueue
from mqbalance.fault import ManualClock, MQFaultStrategy, QueueData, ThreadLocalIndex, TopicPublishInfo
from mqbalance.versions import Semantics

LATENCY = {"broker1": 30_000, "broker2": 50_000}
VARIANTS = ("pre-4.9", "4.x", "5.x")

# The recorded output of the Java experiment (a producer with the pre-4.9 loop): one list of
# brokers per round (each attempt's broker).
RECORDED_SUCCESS = [["broker1"], ["broker2"]] + [["broker1"]] * 8
RECORDED_FAILURE = [["broker1", "broker1"], ["broker2", "broker1"]] + [["broker1", "broker1"]] * 8


def _pre_4_9_select(fs: MQFaultStrategy, tp: TopicPublishInfo, last: str | None) -> MessageQueue:
    """The pre-4.9 ``MQFaultStrategy.selectOneMessageQueue`` loop, on top of the 4.x fault table."""
    queues = tp.message_queues
    index = tp.send_which_queue.increment_and_get()
    for i in range(len(queues)):
        mq = queues[(index + i) % len(queues)]
        if fs.is_available(mq.broker_name) and (last is None or mq.broker_name == last):
            return mq
    not_best = fs.pick_one_at_least()
    if not_best is not None:
        mq = tp.select_one_message_queue()
        return MessageQueue(mq.topic, not_best, tp.send_which_queue.increment_and_get() % 4)
    return tp.select_one_message_queue()


def run(variant: str, *, fail: bool, rounds: int = 10) -> list[list[str]]:
    """Brokers used in each round (one entry per attempt)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    semantics = Semantics.V5 if variant == "5.x" else Semantics.V4
    clock = ManualClock(0)
    fs = MQFaultStrategy(
        semantics=semantics, send_latency_fault_enable=True, clock=clock, which_item_worst=ThreadLocalIndex(initial=0)
    )
    # Java seeds the counter at random; start where the recorded run evidently did (broker1 first).
    tp = TopicPublishInfo.from_route(
        "topic-a",
        [QueueData("broker1", 6, 4), QueueData("broker2", 6, 4)],
        send_which_queue=ThreadLocalIndex(initial=-1),
    )
    used = []
    for _ in range(rounds):
        last = None
        attempts = []
        for attempt in range(2):
            if variant == "pre-4.9":
                mq = _pre_4_9_select(fs, tp, last)
            else:
                mq = fs.select_one_message_queue(tp, last, reset_index=attempt > 0, reset_to=0)
            last = mq.broker_name
            attempts.append(last)
            fs.update_fault_item(last, LATENCY[last], isolation=fail)
            if not fail:
                break
        used.append(attempts)
    return used


EXPLANATION = """\
Why (4.x tables: latency >= 15000 ms -> broker avoided for 600000 ms; a failure counts as 30000 ms):
  * Round 0 goes to broker1 (nothing is known yet). Its 30 s latency isolates it for 600 s.
  * Round 1: broker1 is unavailable, so the probe moves on to broker2, which is then isolated too.
  * From round 2 on both are unavailable: pickOneAtLeast sorts the fault items (available first,
    then lower latency) and picks from the better half: broker1 (30 s) beats broker2 (50 s).
  * All sends failing: the pre-4.9 loop only accepted an available broker equal to
    lastBrokerName, so round 0's retry found none and fell back to pickOneAtLeast -> broker1 again.
    RocketMQ 4.9.x dropped that condition: its retry goes to the still-available broker2.
  * 5.x uses other tables (>= 15000 ms -> 30 s; a failure counts as 10 s -> 10 s) and, once every
    broker is unavailable, round-robins over the reachable ones instead of preferring the fastest.
"""


def print_demo(rounds: int = 10) -> None:
    """Print both experiments (every send succeeding, then failing) next to Java's recorded
    choices, and what they show."""
    for fail, title, recorded in (
        (False, "every send succeeds", RECORDED_SUCCESS),
        (True, "every send fails (one retry)", RECORDED_FAILURE),
    ):
        print(f"== {title} ==")
        results = {v: run(v, fail=fail, rounds=rounds) for v in VARIANTS}
        print(f"{'round':>5}  {'Java (recorded)':<20} " + " ".join(f"{v:<20}" for v in VARIANTS))
        for r in range(rounds):
            printed = ",".join(recorded[r]) if r < len(recorded) else "-"
            print(f"{r:>5}  {printed:<20} " + " ".join(f"{','.join(results[v][r]):<20}" for v in VARIANTS))
        print()
    print(EXPLANATION)


def main(argv: list[str] | None = None) -> int:
    """``python -m mqbalance.fault.demo [--rounds N]`` (``mqbalance fault-latency-demo`` calls
    :func:`print_demo` directly)."""
    parser = argparse.ArgumentParser(prog="python -m mqbalance.fault.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    print_demo(args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
