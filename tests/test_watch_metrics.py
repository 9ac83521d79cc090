"""The watcher's per-group gauges (:mod:`mqbalance.history.metrics`) updated from each tick's
changes expose exactly what counting every connection and owner gives: over random ticks where
groups come and go, members join and leave, owners are recomputed for some groups (as the
collector does: all queues of a changed group) and some reads are incomplete (the last membership
kept, nothing changed)."""

from __future__ import annotations

import random

from prometheus_client.parser import text_string_to_metric_families

from mqbalance.history.collector import FleetState
from mqbalance.history.metrics import WatchMetrics

GAUGES = ("mqbalance_group_members", "mqbalance_group_unowned_queues", "mqbalance_group_double_owned_queues")
Queue = tuple[str, str, str, int]


def per_group(m: WatchMetrics) -> dict[tuple[str, str], float]:
    out = {}
    for family in text_string_to_metric_families(m.exposition().decode()):
        for s in family.samples:
            if s.name in GAUGES:
                out[(s.name, s.labels["group"])] = s.value
    return out


def tick(rng: random.Random, old: FleetState) -> tuple[FleetState, set[Queue]]:
    """The next state and the queues whose owners may have changed (every queue of each group
    whose owners were computed again, before and after)."""
    if rng.random() < 0.15:  # an incomplete read: the last membership and owners kept
        return FleetState(groups=old.groups, members=old.members, ownership=old.ownership), set()
    groups = dict(old.groups)
    for g in (f"g{i}" for i in range(8)):
        if rng.random() < 0.1:
            if g in groups:
                del groups[g]
            else:
                groups[g] = ("CLUSTERING", ("T",), "AVG")
    members = {k: v for k, v in old.members.items() if k[0] in groups and rng.random() > 0.1}
    for g in groups:
        for _ in range(rng.randrange(3)):
            members[(g, f"10.0.0.{rng.randrange(20)}@1", "")] = (None, None, None)
    ownership = dict(old.ownership)
    changed: set[Queue] = set()
    recomputed = {g for g in groups if rng.random() < 0.3} | {q[0] for q in old.ownership if q[0] not in groups}
    for g in recomputed:
        mine = [q for q in ownership if q[0] == g]
        for q in mine:
            del ownership[q]
        changed.update(mine)
        if g in groups:
            for qid in range(rng.randrange(1, 9)):
                q = (g, "T", "broker-a", qid)
                ownership[q] = (None, 0) if rng.random() < 0.2 else ("c", rng.choice((1, 1, 1, 2, 3)))
                changed.add(q)
    return FleetState(groups=groups, members=members, ownership=ownership), changed


def test_the_gauges_from_the_changes_equal_a_full_count() -> None:
    for seed in range(6):
        rng = random.Random(seed)
        incremental, full = WatchMetrics(), WatchMetrics()
        state = FleetState()
        for _ in range(30):
            new, changed = tick(rng, state)
            kw = {"duration_s": 0.01, "skipped": 0, "errors": 0, "offsets_read": False}
            incremental.observe(new, {}, {}, previous=state, changed_queues=changed, **kw)  # type: ignore[arg-type]
            full.observe(new, {}, {}, **kw)  # type: ignore[arg-type]
            assert per_group(incremental) == per_group(full), seed
            state = new


def test_kafka_epoch_gauges_follow_the_group_protocol() -> None:
    """A consumer-protocol group downgraded to classic keeps its generation series (the classic
    generation) and loses its assignment epoch series; a group that goes loses both; upgraded
    again, the assignment epoch is back."""
    from mqbalance.history.kafka_collector import GroupView

    def epochs(m: WatchMetrics) -> dict[tuple[str, str], float]:
        names = ("mqbalance_group_generation", "mqbalance_group_assignment_epoch")
        return {
            (s.name, s.labels["group"]): s.value
            for family in text_string_to_metric_families(m.exposition().decode())
            for s in family.samples
            if s.name in names
        }

    def view(kind: str, generation: int, epoch: int | None) -> GroupView:
        return GroupView(kind, "Stable", "consumer", "range", ("t",), generation, epoch)

    m = WatchMetrics()
    m.observe_kafka_groups({"up": view("consumer", 7, 7), "other": view("consumer", 3, 2)})
    assert epochs(m) == {
        ("mqbalance_group_generation", "up"): 7, ("mqbalance_group_assignment_epoch", "up"): 7,
        ("mqbalance_group_generation", "other"): 3, ("mqbalance_group_assignment_epoch", "other"): 2,
    }  # fmt: skip
    m.observe_kafka_groups({"up": view("classic", 8, None), "other": view("consumer", 3, 2)})
    assert epochs(m) == {
        ("mqbalance_group_generation", "up"): 8,
        ("mqbalance_group_generation", "other"): 3, ("mqbalance_group_assignment_epoch", "other"): 2,
    }  # fmt: skip
    m.observe_kafka_groups({"up": view("consumer", 9, 9)})
    assert epochs(m) == {("mqbalance_group_generation", "up"): 9, ("mqbalance_group_assignment_epoch", "up"): 9}
    m.observe_kafka_groups({})
    assert epochs(m) == {}
