"""Network faults between RocketMQ members and their broker (issue 25, scenarios 3 and 4), on the
real name server and broker (the Rust port) with ``mqbalance rocketmq-consume`` members, every process in a
network namespace of its own (``nemesis_rocketmq``).

* **Scenario 3, a member partitioned from its broker** (its veth down, longer than the broker's
  ``channelExpiredTimeout``, while it keeps running): the broker drops it, the survivor takes its
  queues; when it comes back it still holds them until it rebalances, but its first pull over the
  new connection moves each up to the group's committed offset, so it redoes only what the
  survivor processed after its last commit (a Java client, and the simulator, which models one, go
  on from where they stopped and redo everything). Measured: queue-seconds owned by no reachable
  member, owned twice, duplicates after the return — next to the simulator's figures for the same
  timers and partition (:class:`mqbalance.sim.Partition`). Must hold: nothing lost, every queue
  owned by a reachable member again within ``OWNED_BOUND_S`` of the cut, one owner per queue after
  the return, at most ``duplicates_after_heal_bound`` messages processed twice after it.
* **Scenario 4, the broker partitioned from everyone for 30 s**: members keep their queues and their
  committed progress (no committed offset goes backwards over the partition), and resume from it
  without losing or skipping a message.

Rounds: ``MQBALANCE_NEMESIS_ROUNDS`` (default 2 for scenario 3, 1 for scenario 4); the seed
(``MQBALANCE_NEMESIS_SEED`` replays one) is printed on failure.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from mqbalance.rocketmq.records import (
    check_records,
    duplicates_between,
    ownership_intervals,
    window_figures,
)
from mqbalance.sim import simulate
from nemesis_net import Network, Node
from nemesis_rocketmq import (
    CHANNEL_EXPIRED_MS,
    HEARTBEAT_MS,
    PERSIST_MS,
    REBALANCE_MS,
    Producer,
    RmqGroup,
    commit_regressions,
    make_topic,
    reachable_intervals,
    start_cluster,
    wait_for,
)
from nemesis_zk import Table, rounds, seed_for, write_result
from rocketmq_cluster import RocketMQCluster

pytest_plugins = ["nemesis_plugin"]
pytestmark = pytest.mark.nemesis

QUEUES = 4
RATE = 80.0  # messages per second over the topic (20 per queue)
#: the broker's housekeeping scan (Java's and, as measured here, the Rust port's: every 10 s)
SCAN_S = 10.0
#: a cut member's queues are owned by a reachable member again within: channel expiry + one scan
#: + the survivor's periodic rebalance (an expiry notifies nobody) + slack for a loaded machine
OWNED_BOUND_S = CHANNEL_EXPIRED_MS / 1000 + SCAN_S + REBALANCE_MS / 1000 + 5.0


def duplicates_after_heal_bound(hand_over_s: float) -> float:
    """After the return, messages processed twice at most: what the survivor did on the returning
    member's queues after its last commit — a persist interval, plus the hand-over the test measured
    (from the heal until the split was exact again: both process those queues meanwhile) and 2 s of
    slack. Going on from the old position instead redoes the whole partition's worth (~700 here)."""
    return (QUEUES // 2) * (RATE / QUEUES) * (PERSIST_MS / 1000 + hand_over_s + 2.0)


#: how long scenario 4 cuts the broker off
BROKER_CUT_S = 30.0


def simulated(partition_s: float) -> dict[str, float]:
    """The simulator's figures for scenario 3 under the same timers: the partition's extra queue-seconds
    owned by nobody / twice over a run without it, and its duplicates."""

    def run(events: list[dict[str, Any]]) -> dict[str, Any]:
        return simulate(
            {
                "seed": 1,
                "duration": f"{int(30 + partition_s + 30)}s",
                "brokers": ["broker-a"],
                "topics": {"T": {"queues_per_broker": QUEUES, "rate": RATE}},
                "group": {"consumers": 2, "throughput": 10 * RATE, "start_spread": "0s"},
                "client": {
                    "rebalance_interval": f"{REBALANCE_MS}ms",
                    "heartbeat_interval": f"{HEARTBEAT_MS}ms",
                    "persist_interval": f"{PERSIST_MS}ms",
                },
                "broker": {
                    "channel_expired_timeout": f"{CHANNEL_EXPIRED_MS}ms",
                    "scan_interval": f"{SCAN_S}s",
                    "client_ids": "per-client-id",
                },
                "events": events,
            }
        ).summary

    calm = run([])
    cut = run([{"at": "30s", "partition": {"id": "10.0.0.1@1001", "for": f"{partition_s}s"}}])
    return {
        "pause_queue_s": cut["pause_queue_s"] - calm["pause_queue_s"],
        "owned_twice_queue_s": cut["owned_twice_queue_s"] - calm["owned_twice_queue_s"],
        "duplicates": cut["duplicates"],
        "lost": cut["lost"],
    }


def two_members(
    network: Network, cluster: RocketMQCluster, out: Path, name: str, prefix: str
) -> tuple[list[str], RmqGroup, Producer, list[str]]:
    """Topic ``T-<name>``, group ``g-<name>`` of two members ``<prefix>m0``/``m1``, a producer
    running: once the members split the queues, ``(queues, group, producer, members)``."""
    out.mkdir()
    topic, group = f"T-{name}", f"g-{name}"
    queues = make_topic(cluster, topic, QUEUES)
    g = RmqGroup(network, cluster, out, group, topic)
    producer = Producer(cluster, topic, QUEUES, RATE)
    members = [f"{prefix}m0", f"{prefix}m1"]
    try:
        for m in members:
            g.start(m)
        producer.start()
        wait_for(lambda: g.split_exactly(queues, members), 40, "two members split the queues")
    except BaseException:
        print(g.logs())
        producer.halt.set()
        g.stop_all()
        raise
    return queues, g, producer, members


def drain(g: RmqGroup, producer: Producer, queues: list[str]) -> tuple[Any, Any]:
    """Stop producing, wait until everything produced was processed, stop the members: their
    records and the record check against the queues' max offsets."""
    time.sleep(2.0)
    producer.halt.set()
    producer.join(10)
    wait_for(lambda: g.caught_up(queues), 30, "everything produced is processed")
    ends = g.max_offsets(queues)
    g.stop_all()
    records = g.records()
    return records, check_records(records, ends)


def member_partition_round(
    network: Network, cluster: RocketMQCluster, out: Path, r: int, rng: random.Random, table: Table
) -> None:
    """One round of scenario 3 (its figures go to ``table``; an invariant broken raises)."""
    queues, g, producer, members = two_members(network, cluster, out, f"cut-{r}", f"r{r}")
    try:
        time.sleep(rng.uniform(0.5, 2.0))
        victim = rng.choice(members)
        survivor = next(m for m in members if m != victim)
        victim_id = f"{g.nodes[victim].addr}@{victim}"
        partition_s = rng.uniform(16.0, 20.0)
        cut = time.monotonic()
        network.partition(g.nodes[victim])
        unlisted = wait_for(lambda: victim_id not in g.consumer_ids(), OWNED_BOUND_S, "the broker drops it")
        owned = wait_for(lambda: g.split_exactly(queues, [survivor]), OWNED_BOUND_S, "the survivor holds all")
        at_owned = g.committed(queues)
        time.sleep(max(0.0, cut + partition_s - time.monotonic()))
        # the survivor has committed progress on every queue since it took them all (its first
        # commit is only the offset it started from): the returning member's catch-up then has an
        # offset to move up to. A takeover at the slow end of its bound, healed at once, leaves both
        # working the returning member's queues from where each was until that member rebalances.
        wait_for(
            lambda: all(o > max(at_owned[q], 0) for q, o in g.committed(queues).items()),
            2 * PERSIST_MS / 1000 + 10,
            "the survivor commits progress",
        )
        network.heal(g.nodes[victim])
        healed = time.monotonic()
        settled = wait_for(lambda: g.split_exactly(queues, members), 40, "split again after the return")
        records, check = drain(g, producer, queues)
        intervals = reachable_intervals(ownership_intervals(records, end=time.monotonic()), victim, cut, healed)
        fig = window_figures(intervals, queues, cut, settled)
        sim = simulated(round(healed - cut, 1))
        table.rounds += 1
        table.violations += len(check.lost)
        table.owned_again_s.append(owned - cut)
        table.paused_queue_s.append(fig["pause_queue_s"])
        table.duplicates += duplicates_between(records, cut, time.monotonic())
        extra = table.extra
        extra["duplicates_incl_start_up"].append(check.duplicates)
        extra["partition_s"].append(healed - cut)
        extra["unlisted_by_broker_s"].append(unlisted - cut)
        extra["owned_twice_queue_s"].append(fig["owned_twice_queue_s"])
        extra["settled_after_heal_s"].append(settled - healed)
        after = duplicates_between(records, healed, time.monotonic())
        extra["duplicates_after_heal"].append(after)
        extra["commit_regressions"].append(commit_regressions(records))
        extra["sim_paused_queue_s"].append(sim["pause_queue_s"])
        extra["sim_owned_twice_queue_s"].append(sim["owned_twice_queue_s"])
        extra["sim_duplicates"].append(sim["duplicates"])
        assert check.ok, f"round {r}: lost {check.lost}"
        assert producer.sent > 0 and check.processed >= producer.sent
        assert sim["lost"] == 0
        bound = duplicates_after_heal_bound(settled - healed)
        assert after <= bound, f"round {r}: {after} duplicates after the return (at most {bound:.0f})"
    except BaseException:
        print(g.logs())
        raise
    finally:
        producer.halt.set()
        g.stop_all()


def broker_partition_round(
    network: Network, cluster: RocketMQCluster, broker: Node, out: Path, r: int, rng: random.Random, table: Table
) -> None:
    """One round of scenario 4."""
    queues, g, producer, members = two_members(network, cluster, out, f"brk-{r}", f"b{r}")
    try:
        # some progress committed (a client persists offsets first 10 s after it starts, as Java's)
        wait_for(lambda: all(o > 0 for o in g.committed(queues).values()), 30, "offsets committed")
        time.sleep(rng.uniform(0.5, 3.0))
        before_held = g.held()
        before = g.committed(queues)
        cut = time.monotonic()
        network.partition(broker)
        time.sleep(BROKER_CUT_S)
        network.heal(broker)
        healed = time.monotonic()
        answers = wait_for(lambda: g.committed(queues), 20, "the broker answers again")
        kept = g.committed(queues)

        def every_queue_worked_again() -> bool:
            recs = g.records()
            return all(
                any(row.get("e") == "p" and row["q"] == q and row["t0"] >= healed for rs in recs.values() for row in rs)
                for q in queues
            )

        resumed = wait_for(every_queue_worked_again, 30, "every queue processed again")
        settled = wait_for(lambda: g.split_exactly(queues, members), 40, "one owner per queue")
        after_held = g.held()
        records, check = drain(g, producer, queues)
        regressed = {q: (before[q], kept[q]) for q in queues if kept[q] < before[q]}
        table.rounds += 1
        table.violations += len(check.lost) + len(regressed)
        table.owned_again_s.append(settled - healed)
        table.paused_queue_s.append(len(queues) * (resumed - cut))
        table.duplicates += duplicates_between(records, cut, time.monotonic())
        table.extra["duplicates_incl_start_up"].append(check.duplicates)
        table.extra["resumed_after_heal_s"].append(resumed - healed)
        table.extra["broker_answers_after_heal_s"].append(answers - healed)
        table.extra["kept_same_owners"].append(float(after_held == before_held))
        table.extra["sends_failed"].append(producer.failed)
        assert not regressed, f"round {r}: committed offsets went back {regressed}"
        assert check.ok, f"round {r}: lost {check.lost}"
    except BaseException:
        print(g.logs())
        raise
    finally:
        producer.halt.set()
        g.stop_all()


def test_scenario_3_member_partitioned_from_its_broker(network: Network, tmp_path: Path) -> None:
    seed = seed_for("rocketmq-member-partition")
    rng = random.Random(seed)
    table = Table("3: RocketMQ member partitioned from its broker")
    cluster, _, _ = start_cluster(network)
    try:
        for r in range(rounds(2)):
            try:
                member_partition_round(network, cluster, tmp_path / f"round{r}", r, rng, table)
            except BaseException:
                print(f"seed {seed} (MQBALANCE_NEMESIS_SEED={seed} replays it), round {r}")
                raise
    finally:
        cluster.close()
        write_result(table)
    assert table.violations == 0
    assert max(table.owned_again_s) <= OWNED_BOUND_S


def test_scenario_4_broker_partitioned_from_everyone(network: Network, tmp_path: Path) -> None:
    seed = seed_for("rocketmq-broker-partition")
    rng = random.Random(seed)
    table = Table(f"4: RocketMQ broker partitioned from everyone for {BROKER_CUT_S:g} s")
    cluster, _, broker = start_cluster(network)
    try:
        for r in range(rounds(1)):
            try:
                broker_partition_round(network, cluster, broker, tmp_path / f"round{r}", r, rng, table)
            except BaseException:
                print(f"seed {seed} (MQBALANCE_NEMESIS_SEED={seed} replays it), round {r}")
                raise
    finally:
        cluster.close()
        write_result(table)
    assert table.violations == 0
