"""The fleet package without Spark: the engine equals the per-group API for every strategy, the
example's hazards are found, a clean fleet has none, snapshots round-trip through Parquet, bad
snapshots give clear errors naming file and field, reports are written."""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqbalance import MessageQueue, sort_client_ids, sort_queues, strategy
from mqbalance.allocation.registry import REGISTRY, StrategyName, Use, names_for
from mqbalance.cli import main
from mqbalance.fleet import (
    FINDING_KINDS,
    HAZARD_GROUPS,
    FindingKind,
    SnapshotError,
    assign_snapshot,
    assignment_table,
    audit_snapshot,
    example_fleet,
    example_pair,
    load_snapshot,
    snapshot_from_dict,
    write_outputs,
    write_parquet,
)
from mqbalance.fleet.rocketmq import assignment, from_arrow, schemas
from mqbalance.fleet.rocketmq import churn as churn_mod
from mqbalance.fleet.rocketmq import facts as facts_mod
from mqbalance.fleet.rocketmq import snapshot as snapshot_model
from mqbalance.fleet.rocketmq import what_if as what_if_mod
from mqbalance.spark.arrow import ROWS_PER_BATCH


def expanded_shares(result) -> list[float]:
    """An audit's load / fair share of every (clustering process, topic), one entry each."""
    return [s for s, n in zip(result.fair_share.tolist(), result.fair_share_processes.tolist()) for _ in range(n)]


def consumers_by_queue(table) -> dict[tuple[str, str, str, int], list[str]]:
    """Sorted consumers of every queue of an assignment (an Arrow table or a Spark DataFrame)."""
    rows = table.to_pylist() if hasattr(table, "to_pylist") else [r.asDict() for r in table.collect()]
    out: dict[tuple[str, str, str, int], list[str]] = defaultdict(list)
    for r in rows:
        key = (r["group"], r["topic"], r["broker_name"], r["queue_id"])
        out.setdefault(key, [])
        if r["consumer"] is not None:
            out[key].append(r["consumer"])
    return {k: sorted(v) for k, v in out.items()}


STRATEGIES = [
    ("AVG", "AVG", {}),
    ("AVG_BY_CIRCLE", "AVG_BY_CIRCLE", {}),
    ({"name": "CONSISTENT_HASH", "virtualNodeCnt": 7}, "CONSISTENT_HASH", {"virtual_node_cnt": 7}),
    ({"name": "CONSISTENT_HASH_BOUNDED", "epsilon": 0.5}, "CONSISTENT_HASH_BOUNDED", {"epsilon": 0.5}),
    ({"name": "MACHINE_ROOM", "consumeridcs": ["hz", "sh"]}, "MACHINE_ROOM", {"consumer_idcs": ["hz", "sh"]}),
    ({"name": "MACHINE_ROOM_NEARBY", "inner": "AVG"}, "MACHINE_ROOM_NEARBY", {"inner": strategy("AVG")}),
    (
        {"name": "MACHINE_ROOM_NEARBY", "inner": "CONSISTENT_HASH", "virtualNodeCnt": 5},
        "MACHINE_ROOM_NEARBY",
        {"inner": strategy("CONSISTENT_HASH", virtual_node_cnt=5)},
    ),
]


def test_engine_equals_strategy_assign_for_every_strategy():
    assert sorted({name for _, name, _ in STRATEGIES}) == sorted(names_for(Use.FLEET_AUDIT))  # the registry's
    brokers = ["hz@broker-a", "sh@broker-b", "gz@broker-c", "broker-d"]
    topics = {
        "TopicA": {
            "queueDatas": [{"brokerName": b, "readQueueNums": 6, "writeQueueNums": 6, "perm": 6} for b in brokers]
        },
        "TopicB": {
            "queueDatas": [
                {"brokerName": b, "readQueueNums": 3, "writeQueueNums": 5, "perm": 6 if i else 4}
                for i, b in enumerate(brokers)
            ]
        },
    }
    clients = ["hz@10.0.0.1@1", "sh@10.0.0.2@1", "hz@10.0.0.3@1", "bj@10.0.0.4@1", "10.0.0.5@DEFAULT"]
    groups = {
        f"cg-{i}": {
            "messageModel": "CLUSTERING",
            "subscriptions": ["TopicA", "TopicB"],
            "strategy": spec,
            "connections": [{"clientId": c} for c in clients],
        }
        for i, (spec, _, _) in enumerate(STRATEGIES)
    }
    snap = snapshot_from_dict({"topics": topics, "groups": groups}, "every-strategy")
    got = consumers_by_queue(assign_snapshot(snap))
    for i, (_, name, params) in enumerate(STRATEGIES):
        s = strategy(name, **params)
        for t, route in topics.items():
            queues = [
                MessageQueue(t, q["brokerName"], k)
                for q in route["queueDatas"]
                if q["perm"] & 4
                for k in range(q["readQueueNums"])
            ]
            expected = {q: [] for q in queues}
            for cid, owned in s.assign(queues, clients, java_sort=True).items():
                for q in owned:
                    expected[q].append(cid)
            for q, cids in expected.items():
                assert got[(f"cg-{i}", t, q.broker_name, q.queue_id)] == sorted(cids), (name, q)


def test_broadcasting_consumes_everything_and_mixed_strategies_behave_per_client():
    topics = {"T": {"queueDatas": [{"brokerName": "b", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}]}}
    groups = {
        "bc": {
            "messageModel": "BROADCASTING",
            "subscriptions": ["T"],
            "connections": [{"clientId": "x"}, {"clientId": "y"}],
        },
        "mixed": {
            "messageModel": "CLUSTERING",
            "subscriptions": ["T"],
            "strategy": "AVG",
            "connections": [{"clientId": "a"}, {"clientId": "b", "strategy": "AVG_BY_CIRCLE"}],
        },
    }
    got = consumers_by_queue(assign_snapshot(snapshot_from_dict({"topics": topics, "groups": groups}, "t")))
    assert all(got[("bc", "T", "b", q)] == ["x", "y"] for q in range(4))
    # a (AVG) takes 0,1; b (AVG_BY_CIRCLE as slot 1) takes 1,3: queue 1 twice, queue 2 by nobody.
    assert [got[("mixed", "T", "b", q)] for q in range(4)] == [["a"], ["a", "b"], [], ["b"]]


def test_example_hazards_are_found_and_a_clean_fleet_has_none(tmp_path):
    snap = snapshot_from_dict(example_fleet(7), "current")
    result = audit_snapshot(snap)
    by_kind = defaultdict(set)
    for f in result.findings:
        by_kind[f.kind].add(f.group)
    assert by_kind[FindingKind.DUPLICATE_CLIENT_ID] == {"cg-payments-dup"}
    dup = next(f for f in result.findings if f.kind is FindingKind.DUPLICATE_CLIENT_ID)
    stranded = next(f for f in result.findings if f.kind is FindingKind.UNOWNED and f.group == "cg-payments-dup")
    assert dup.detail.endswith(f"the group has {stranded.count} queues consumed by nobody")
    assert by_kind[FindingKind.UNOWNED] == by_kind[FindingKind.DOUBLE_OWNED] == {"cg-payments-dup", "cg-orders-mixed"}
    assert by_kind[FindingKind.IDLE_CONSUMER] == {"cg-audit-idle"}
    assert by_kind[FindingKind.STRATEGY_MISMATCH] == {"cg-orders-mixed"}
    assert by_kind[FindingKind.MISSING_ROUTE] == {"cg-ghost"}
    assert set().union(*by_kind.values()) == set(HAZARD_GROUPS)
    assert all(f.kind.urgent for f in result.worst(5)) and result.worst(1)[0].count == 8
    paths = write_outputs(result, tmp_path, assignments=assign_snapshot(snap), source="example <fleet>")
    report = paths["report_md"].read_text()
    assert "cg-payments-dup" in report and "worst_groups.png" in report
    assert (tmp_path / "load_vs_fair_share.png").stat().st_size > 1000
    assert "example &lt;fleet&gt;" in paths["report_html"].read_text()
    assert json.loads(paths["findings_json"].read_text())["totals"]["duplicated_client_ids"] == 1
    assert any(p.suffix == ".parquet" for p in paths["assignments"].iterdir())

    clean = snapshot_from_dict(example_fleet(11, hazards=False), "clean")
    assert audit_snapshot(clean).findings == []


def test_parquet_snapshot_gives_the_same_assignment(tmp_path):
    snap = snapshot_from_dict(example_fleet(3, groups=15), "json")
    again = load_snapshot(write_parquet(snap, tmp_path / "snap"))
    assert consumers_by_queue(assign_snapshot(again)) == consumers_by_queue(assign_snapshot(snap))
    assert again.consumer_groups() == snap.consumer_groups()


def test_machine_room_idcs_survive_parquet_even_with_commas(tmp_path):
    topics = {"T": {"queueDatas": [{"brokerName": "a,b@x", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}]}}
    spec = {"name": "MACHINE_ROOM", "consumeridcs": ["a,b"]}
    groups = {"g": {"subscriptions": ["T"], "strategy": spec, "connections": [{"clientId": "c"}]}}
    snap = snapshot_from_dict({"topics": topics, "groups": groups}, "commas")
    again = load_snapshot(write_parquet(snap, tmp_path / "snap"))
    assert again.consumer_groups()["g"].strategies[0].consumer_idcs == ("a,b",)
    assert consumers_by_queue(assign_snapshot(again))[("g", "T", "a,b@x", 0)] == ["c"]


BAD = [
    ({"groups": {}}, "missing field 'topics'"),
    (
        {
            "topics": {"T": {"queueDatas": [{"brokerName": "b", "readQueueNums": -1, "writeQueueNums": 1, "perm": 6}]}},
            "groups": {},
        },
        "readQueueNums: must be >= 0",
    ),
    (
        {
            "topics": {
                "T": {"queueDatas": [{"brokerName": "b", "readQueueNums": "8", "writeQueueNums": 1, "perm": 6}]}
            },
            "groups": {},
        },
        "readQueueNums: expected int",
    ),
    (
        {
            "topics": {
                "T": {"queueDatas": [{"brokerName": "b", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}] * 2}
            },
            "groups": {},
        },
        "appears twice",
    ),
    (
        {
            "topics": {},
            "groups": {"g": {"subscriptions": [], "strategy": "RANDOM", "connections": [{"clientId": "c"}]}},
        },
        "unknown strategy 'RANDOM'",
    ),
    (
        {
            "topics": {},
            "groups": {"g": {"subscriptions": [], "strategy": "CONFIG", "connections": [{"clientId": "c"}]}},
        },
        re.escape(REGISTRY[StrategyName.CONFIG].refusal(Use.FLEET_AUDIT) or "CONFIG is auditable?"),
    ),
    ({"topics": {}, "groups": {"g": {"subscriptions": ["T", "T"], "connections": []}}}, "listed twice"),
    (
        {"topics": {}, "groups": {"g": {"subscriptions": [], "messageModel": "P2P", "connections": []}}},
        "CLUSTERING or BROADCASTING",
    ),
    (
        {"topics": {}, "groups": {"g": {"subscriptions": [], "connections": [{"clientAddr": "x"}]}}},
        "missing field 'clientId'",
    ),
]


@pytest.mark.parametrize("data,message", BAD, ids=[m.replace("\\", "") for _, m in BAD])
def test_bad_snapshots_name_file_and_field(tmp_path, data, message):
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SnapshotError, match=message) as info:
        load_snapshot(path)
    assert str(path) in str(info.value)


def test_duplicate_topics_and_bad_parquet(tmp_path):
    path = tmp_path / "dup.json"
    path.write_text('{"topics": {"T": {"queueDatas": []}, "T": {"queueDatas": []}}, "groups": {}}')
    with pytest.raises(SnapshotError, match="duplicate key 'T'"):
        load_snapshot(path)
    snap = snapshot_from_dict(example_fleet(3, groups=5), "x")
    d = write_parquet(snap, tmp_path / "p")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table({"topic": ["T"], "broker_name": ["b"], "read_queue_nums": [-3], "write_queue_nums": [1], "perm": [6]}),
        d / "queue_data.parquet",
    )
    with pytest.raises(SnapshotError, match="queue_data.parquet row 0: queue counts must be >= 0"):
        load_snapshot(d)
    pq.write_table(pa.table({"topic": ["T"], "broker_name": ["b"]}), d / "queue_data.parquet")
    with pytest.raises(SnapshotError, match="missing column 'read_queue_nums'"):
        load_snapshot(d)


def test_engine_blocks_are_bounded_and_facts_concatenate_to_the_whole_audit():
    import pyarrow as pa

    from mqbalance.fleet import summarise
    from mqbalance.fleet.rocketmq import facts as facts_mod
    from mqbalance.fleet.rocketmq import schemas
    from mqbalance.fleet.rocketmq import what_if as what_if_mod

    snap = snapshot_from_dict(example_fleet(7), "example")
    pairs = snap.pair_table()
    counts = assignment.pair_queue_counts(pairs)
    for limit in (1, 40, 10**6):
        slices = list(assignment.pair_slices(pairs, limit))
        assert sum(s.num_rows for s in slices) == pairs.num_rows
        for part in slices:  # within the limit, or a single pair that alone exceeds it
            assert part.num_rows == 1 or assignment.pair_queue_counts(part).sum() <= limit
    assert int(counts.sum()) == sum(r.units for r in audit_snapshot(snap).rows)
    groups = snap.consumer_groups()
    batches = pairs.to_batches(max_chunksize=7)  # what Spark hands a task
    blocks = list(assignment.assignment_blocks(batches, groups))
    assert max(b.num_rows for b in blocks) <= ROWS_PER_BATCH
    assert consumers_by_queue(pa.Table.from_batches(blocks)) == consumers_by_queue(assign_snapshot(snap))
    facts = pa.Table.from_batches(list(facts_mod.fact_blocks(batches, groups)), schema=schemas.FACT_SCHEMA)
    whole = audit_snapshot(snap)
    from_facts = summarise(snap, *facts_mod.split_facts(facts))
    assert from_facts.findings == whole.findings and from_facts.rows == whole.rows
    assert sorted(expanded_shares(from_facts)) == sorted(expanded_shares(whole)) and max(whole.fair_share) > 1
    # The what-if rows computed batch by batch with the facts equal the whole fleet's.
    candidates = what_if_mod.what_if_candidates("AVG,CONSISTENT_HASH_BOUNDED,STICKY")
    facts = pa.Table.from_batches(list(facts_mod.fact_blocks(batches, groups, candidates)), schema=schemas.FACT_SCHEMA)
    with_what_if = summarise(snap, *facts_mod.split_facts(facts), what_if=facts_mod.what_if_facts(facts))
    whole = audit_snapshot(snap, what_if=candidates)
    assert with_what_if.what_if == whole.what_if and len(whole.what_if) == 3 * sum(
        1 for r in whole.rows if r.message_model == "CLUSTERING" and r.consumers
    )
    assert with_what_if.findings == whole.findings


def test_cli_assign_prints_fleet_totals_and_the_worst_pairs_first(capsys):
    assert main(["assign", "--top", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("fleet: ") and "unowned 11" in lines[1] and "consumed twice 11" in lines[1]
    shown = [line.split()[0] for line in lines[4:7]]
    assert shown == ["cg-payments-dup", "cg-orders-mixed", "cg-audit-idle"]
    assert lines[7].startswith("... ") and "more group/topic pairs" in lines[7]
    assert main(["assign", "--top", "-1"]) == 2


# ---- what if a group switched strategy ----------------------------------------------------------


def _what_if_fleet():
    """Groups on CONSISTENT_HASH (skewed), AVG, a duplicated id and a broadcasting one, over two
    topics of different sizes."""
    topics = {
        "T": {
            "queueDatas": [
                {"brokerName": f"b{i}", "readQueueNums": 8, "writeQueueNums": 8, "perm": 6} for i in range(5)
            ]
        },
        "U": {"queueDatas": [{"brokerName": "b0", "readQueueNums": 7, "writeQueueNums": 7, "perm": 6}]},
    }
    ids = [f"10.0.0.{i}@{i}" for i in range(6)]
    groups = {
        "cg-ch": {
            "subscriptions": ["T", "U"],
            "strategy": "CONSISTENT_HASH",
            "connections": [{"clientId": c} for c in ids],
        },
        "cg-avg": {"subscriptions": ["T"], "strategy": "AVG", "connections": [{"clientId": c} for c in ids[:4]]},
        "cg-dup": {"subscriptions": ["U"], "connections": [{"clientId": c} for c in (ids[0], ids[1], ids[1])]},
        "cg-bc": {"messageModel": "BROADCASTING", "subscriptions": ["T"], "connections": [{"clientId": "x"}]},
    }
    return snapshot_from_dict({"topics": topics, "groups": groups}, "what-if")


def _queues(snap, topic):
    return [MessageQueue(topic, b, q) for b, n in snap.readable_routes()[topic] for q in range(n)]


def test_what_if_moved_and_max_load_match_the_per_group_api():
    """Moved = queues whose owner under the candidate (the per-group ``assign``, Java-sorted) is
    not their owner now; max load = the longest list; STICKY moves exactly the excess over the
    balanced quotas (the largest quotas to the members holding most) and is balanced."""
    snap = _what_if_fleet()
    groups = snap.consumer_groups()
    result = audit_snapshot(snap, what_if="AVG,CONSISTENT_HASH_BOUNDED,STICKY,CONSISTENT_HASH")
    rows = {(w.group, w.topic, w.strategy): w for w in result.what_if}
    assert {(g, t) for g, t, _ in rows} == {("cg-ch", "T"), ("cg-ch", "U"), ("cg-avg", "T"), ("cg-dup", "U")}
    for group, topic in (("cg-ch", "T"), ("cg-ch", "U"), ("cg-avg", "T")):
        ids = groups[group].client_ids
        qs = _queues(snap, topic)
        now_name = groups[group].strategies[0].display_name
        now = {q: c for c, share in strategy(now_name).assign(qs, ids, java_sort=True).items() for q in share}
        for name in ("AVG", "CONSISTENT_HASH_BOUNDED", "CONSISTENT_HASH"):
            after = strategy(name).assign(qs, ids, java_sort=True)
            w = rows[(group, topic, name)]
            assert w.units == len(qs) and w.consumers == len(ids)
            assert w.moved == sum(1 for c, share in after.items() for q in share if now[q] != c), (group, topic, name)
            assert w.max_load == max(len(share) for share in after.values())
            assert w.idle == sum(1 for share in after.values() if not share)
        assert rows[(group, topic, now_name)].moved == 0  # the strategy it runs moves nothing
        held = sorted((sum(1 for c in now.values() if c == cid) for cid in ids), reverse=True)
        base, extra = divmod(len(qs), len(ids))
        quotas = [base + 1] * extra + [base] * (len(ids) - extra)
        sticky = rows[(group, topic, "STICKY")]
        assert sticky.moved == sum(max(0, h - q) for h, q in zip(held, quotas))
        assert sticky.max_load == -(-len(qs) // len(ids))
    skewed = rows[("cg-ch", "T", "CONSISTENT_HASH")]
    assert skewed.now_max == skewed.max_load and rows[("cg-ch", "T", "STICKY")].moved > 0
    # A duplicated id: both processes on it consume what Java's allocate gives that id (the third
    # slot's queues stay unowned whatever the strategy).
    dup = rows[("cg-dup", "U", "AVG")]
    ids, qs = sort_client_ids(groups["cg-dup"].client_ids), sort_queues(_queues(snap, "U"))
    assert (dup.consumers, dup.units) == (3, 7)
    assert dup.max_load == max(len(strategy("AVG").allocate("cg-dup", c, qs, ids)) for c in ids)


def test_what_if_report_section_and_csv(tmp_path):
    snap = _what_if_fleet()
    plain = write_outputs(audit_snapshot(snap), tmp_path / "plain", source="s")
    assert "what_if_csv" not in plain and "What if" not in plain["report_md"].read_text()
    result = audit_snapshot(snap, what_if=["AVG", "STICKY"])
    paths = write_outputs(result, tmp_path / "wi", source="s")
    md = paths["report_md"].read_text()
    assert "## What if groups switched strategy" in md and "| STICKY |" in md and "| now |" in md
    assert "| cg-ch |" in md  # the skewed group is listed with its moves per candidate
    html = paths["report_html"].read_text()
    assert '<section id="what-if">' in html and "<th>STICKY<br>" in html
    lines = paths["what_if_csv"].read_text().splitlines()
    assert lines[0] == "group,topic,strategy,queues,processes,moved,max_load,idle,now_max"
    assert len(lines) == 1 + 2 * 4  # 4 clustering pairs x 2 candidates


#: Every strategy of the registry a what-if cannot try (MACHINE_ROOM_NEARBY with an inner one to parse).
NOT_WHAT_IF = [
    n.value if n is not StrategyName.MACHINE_ROOM_NEARBY else f"{n.value}-AVG"
    for n in StrategyName
    if n.value not in names_for(Use.WHAT_IF)
]


@pytest.mark.parametrize("candidates", NOT_WHAT_IF)
def test_what_if_refuses_candidates_it_cannot_try(candidates):
    from mqbalance.exceptions import UnsupportedStrategyError

    assert NOT_WHAT_IF  # CONFIG at least
    with pytest.raises(UnsupportedStrategyError) as info:
        audit_snapshot(_what_if_fleet(), what_if=candidates)
    why = REGISTRY[StrategyName(candidates.split("-AVG")[0])].refusal(Use.WHAT_IF)
    assert why is not None and why in str(info.value)


def test_what_if_refuses_an_unknown_candidate_and_tries_every_one_the_registry_allows():
    from mqbalance.exceptions import UnknownStrategyError

    with pytest.raises(UnknownStrategyError, match="NOPE"):
        audit_snapshot(_what_if_fleet(), what_if="NOPE")
    result = audit_snapshot(_what_if_fleet(), what_if=names_for(Use.WHAT_IF))
    assert sorted({w.strategy for w in result.what_if}) == sorted(names_for(Use.WHAT_IF))


def test_audit_cli_tries_the_default_candidates_on_small_fleets_only(monkeypatch):
    import mqbalance.fleet
    from mqbalance.cli import audit as cli
    from mqbalance.fleet import DEFAULT_WHAT_IF
    from mqbalance.progress import Progress

    snap, say = _what_if_fleet(), Progress(quiet=True)
    assert [s.display_name for s in cli._what_if(None, snap, say)] == list(DEFAULT_WHAT_IF)
    assert cli._what_if("none", snap, say) == ()
    monkeypatch.setattr(mqbalance.fleet, "WHAT_IF_DEFAULT_MAX_QUEUES", snap.readable_queue_count() - 1)
    assert cli._what_if(None, snap, say) == ()
    assert [s.display_name for s in cli._what_if("STICKY", snap, say)] == ["STICKY"]


def test_what_if_sticky_keeps_a_balanced_group_without_the_core_and_equals_it():
    """The shortcut (a balanced previous assignment is STICKY's answer) gives exactly what the core
    computes, on fleets with balanced, skewed, mixed, duplicated-id and broadcasting groups."""

    candidates = what_if_mod.what_if_candidates("STICKY")
    for snap in (_what_if_fleet(), snapshot_from_dict(example_fleet(7), "example")):
        a, groups = assign_snapshot(snap), snap.consumer_groups()
        fast = what_if_mod.what_if(a, groups, candidates)
        assert fast.equals(what_if_mod.what_if(a, groups, candidates, _shortcut=False))
        assert 0 < sum(fast.column("moved").to_pylist()) < fast.num_rows * max(fast.column("queues").to_pylist())


_QUEUES = [(g, t, b, q) for g in ("g1", "g2") for t in ("T1", "T2") for b in ("b1", "b2") for q in range(3)]
_OWNERS = st.lists(st.sampled_from(["c1", "c2", "c3"]), max_size=3)  # [] = nobody consumes the queue
_ASSIGNMENT = st.dictionaries(st.sampled_from(_QUEUES), _OWNERS, min_size=1)


def _assignment_table(assignment):
    rows = [
        {"group": g, "topic": t, "broker_name": b, "queue_id": q, "consumer": c}
        for (g, t, b, q), owners in sorted(assignment.items())
        for c in (owners or [None])
    ]
    return pa.Table.from_pylist(rows, schema=schemas.ASSIGNMENT_SCHEMA)


@settings(max_examples=300, deadline=None)
@given(_ASSIGNMENT, _ASSIGNMENT, st.booleans())
def test_churn_counts_the_queues_in_both_whose_consumers_differ(now, before, packed):
    """Against a count here, with both of ``churn``'s keyings (one packed int64 per queue, or the
    key columns one by one when they would not fit)."""
    expected: dict[tuple[str, str], int] = defaultdict(int)
    for (g, t, b, q), owners in now.items():
        expected[(g, t)] += (g, t, b, q) in before and Counter(owners) != Counter(before[(g, t, b, q)])
    limit = churn_mod.PACKED_KEY_LIMIT
    churn_mod.PACKED_KEY_LIMIT = limit if packed else 0
    try:
        got = churn_mod.churn(_assignment_table(now), _assignment_table(before))
    finally:
        churn_mod.PACKED_KEY_LIMIT = limit
    assert {(r["group"], r["topic"]): r["moved"] for r in got.to_pylist()} == dict(expected)


def test_in_process_audit_counts_churn_against_an_earlier_snapshot():
    previous, current = example_pair(7)
    snap, prev = snapshot_from_dict(current, "current"), snapshot_from_dict(previous, "previous")
    now, before = consumers_by_queue(assign_snapshot(snap)), consumers_by_queue(assign_snapshot(prev))
    expected: dict[tuple[str, str], int] = defaultdict(int)
    for (g, t, b, q), owners in now.items():
        expected[(g, t)] += (g, t, b, q) in before and owners != before[(g, t, b, q)]
    result = audit_snapshot(snap, previous=prev)
    assert {(r.group, r.topic): r.churn for r in result.rows} == {
        (r.group, r.topic): expected[(r.group, r.topic)] for r in result.rows
    }
    assert result.totals.churned_queues == sum(expected.values()) > 0


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["g1", "g2"]),
            st.sampled_from(["T1", "T2"]),
            st.sampled_from(["b-a", "b-b", "b-c"]),
            st.integers(0, 2**31 - 1) | st.integers(0, 3),
            st.none() | st.sampled_from(["c1", "c2", "c3"]),
        ),
        max_size=40,
    ),
    packed=st.booleans(),
)
def test_pair_counts_match_a_count_of_every_row(rows, packed):
    """Per pair: queues, queues with no consumer, queues with more than one; per (pair, consumer):
    its queues — counted here row by row, against both of ``pair_counts``' keyings."""
    import mqbalance.fleet.rocketmq.facts as facts_module

    table = pa.table(
        dict(zip(["group", "topic", "broker_name", "queue_id", "consumer"], zip(*rows)))
        if rows
        else {k: [] for k in ["group", "topic", "broker_name", "queue_id", "consumer"]},
        schema=schemas.ASSIGNMENT_SCHEMA,
    )
    consumers_of: dict[tuple, int] = Counter()
    for g, t, b, q, c in rows:
        consumers_of[(g, t, b, q)] += c is not None
    want_pair: dict[tuple, list[int]] = {}
    for (g, t, _, _), n in consumers_of.items():
        acc = want_pair.setdefault((g, t), [0, 0, 0])
        acc[0] += 1
        acc[1] += n == 0
        acc[2] += n > 1
    want_id = Counter((g, t, c) for g, t, _, _, c in rows if c is not None)
    limit = facts_module.PACKED_KEY_LIMIT
    facts_module.PACKED_KEY_LIMIT = limit if packed else 0
    try:
        per_pair, per_id = facts_module.pair_counts(table)
    finally:
        facts_module.PACKED_KEY_LIMIT = limit
    got_pair = {
        (g, t): [n, u, d]
        for g, t, n, u, d in zip(
            *(per_pair.column(k).to_pylist() for k in ("group", "topic", "queues", "unowned", "double_owned"))
        )
    }
    got_id = {
        (g, t, c): n
        for g, t, c, n in zip(*(per_id.column(k).to_pylist() for k in ("group", "topic", "consumer", "count")))
    }
    assert got_pair == want_pair
    assert got_id == dict(want_id)


def test_audit_rows_and_totals_match_a_count_per_connection():
    """Loads, idle processes, fair shares and the idle total, counted here connection by
    connection from the assignment rows, against the audit (which never loops per process)."""
    snap = snapshot_from_dict(example_fleet(9), "example")
    result = audit_snapshot(snap)
    groups = snap.consumer_groups()
    owned: dict[tuple[str, str], Counter] = defaultdict(Counter)
    queues: dict[tuple[str, str], set] = defaultdict(set)
    for r in assign_snapshot(snap).to_pylist():
        queues[(r["group"], r["topic"])].add((r["broker_name"], r["queue_id"]))
        if r["consumer"] is not None:
            owned[(r["group"], r["topic"])][r["consumer"]] += 1
    fair_share, busy = [], defaultdict(set)
    for row in result.rows:
        group, key = groups[row.group], (row.group, row.topic)
        ids = [c.client_id for c in group.connections]
        loads = [owned[key][cid] // ids.count(cid) for cid in ids]
        assert (row.consumers, row.units) == (len(ids), len(queues[key]))
        assert (row.min_load, row.max_load) == (min(loads), max(loads))
        assert row.idle_consumers == loads.count(0)
        assert row.mean_load == round(sum(loads) / len(loads), 3)
        if row.message_model == "CLUSTERING":
            fair_share += [x / (row.units / len(ids)) for x in loads]
            busy[row.group] |= {j for j, x in enumerate(loads) if x}
    assert sorted(expanded_shares(result)) == pytest.approx(sorted(fair_share))
    clustering = [g for g, v in groups.items() if v.message_model.value == "CLUSTERING"]
    idle_anywhere = sum(len(groups[g].connections) - len(busy[g]) for g in clustering)
    assert result.totals.idle_processes == idle_anywhere
    assert result.totals.idle_process_topics == sum(
        r.idle_consumers for r in result.rows if r.message_model == "CLUSTERING"
    )
    assert any(groups[g].duplicated_ids for g in clustering)  # the example plants duplicated ids


def test_parquet_snapshots_load_by_columns_exactly_as_row_by_row(tmp_path):
    """A valid Parquet snapshot is read with Arrow kernels (no object per row); what it gives is
    what the row-by-row reader (the one that names a bad row) gives: the same tables and groups."""
    import pyarrow.parquet as pq

    data = example_fleet(9)
    data["groups"]["cg-mixed"] = {
        "subscriptions": [next(iter(data["topics"]))],
        "connections": [{"clientId": "a", "strategy": "AVG"}, {"clientId": "b", "strategy": "CONSISTENT_HASH"}],
    }
    d = write_parquet(snapshot_from_dict(data, "e"), tmp_path / "p")
    raw = {n: pq.read_table(d / f"{n}.parquet") for n in ("queue_data", "connections", "subscriptions")}
    fast = from_arrow.columnar_tables(str(d), raw)
    assert fast is not None
    qd, cn, sb = (from_arrow.columns_of(raw[n], n) for n in ("queue_data", "connections", "subscriptions"))
    specs = from_arrow.validate_tables(str(d), qd, cn, sb)
    assert fast[0].equals(snapshot_model.table_of("queue_data", qd))
    assert fast[1].equals(snapshot_model.table_of("connections", cn))
    assert fast[2].equals(snapshot_model.table_of("subscriptions", sb))
    assert [fast[4][c] for c in fast[3]] == specs
    loaded = load_snapshot(d)
    assert dict(loaded.consumer_groups()) == dict(snapshot_from_dict(data, "e").consumer_groups())
    assert loaded.consumer_groups()["cg-mixed"].strategies == [specs[-2], specs[-1]]
    # one bad row anywhere sends the load down the row-by-row path, which names it
    t = raw["connections"]
    bad = t.set_column(t.column_names.index("client_id"), "client_id", pa.array([*t["client_id"].to_pylist()[:-1], ""]))
    assert from_arrow.columnar_tables(str(d), {**raw, "connections": bad}) is None
    pq.write_table(bad, d / "connections.parquet")
    with pytest.raises(
        SnapshotError, match=rf"connections.parquet row {t.num_rows - 1}.client_id: expected a non-empty"
    ):
        load_snapshot(d)


def test_a_snapshot_too_large_to_assign_in_process_still_loads_for_the_spark_audit(tmp_path, monkeypatch):
    """The whole assignment table in memory (``assign_snapshot``) holds every row
    (``ASSIGNMENT_QUEUE_BYTES`` a queue), the audits only the pairs and groups and one slice at a time
    (``QUEUE_BYTES``): a budget between the two loads the snapshot, audits it in-process (streamed,
    as the Spark tasks do) and refuses ``assign_snapshot`` by name; below both, the load refuses."""

    data = {
        "topics": {"T": {"queueDatas": [{"brokerName": "b", "readQueueNums": 100, "writeQueueNums": 100, "perm": 6}]}},
        "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": "c"}]}},
    }
    monkeypatch.setenv(
        "MQBALANCE_MEMORY_BUDGET", str(100 * (snapshot_model.QUEUE_BYTES + assignment.ASSIGNMENT_QUEUE_BYTES) // 2)
    )
    snap = snapshot_from_dict(data, "big")
    with pytest.raises(SnapshotError, match=r"big: readable queues \(sum of readQueueNums\) = 100 would need"):
        assign_snapshot(snap)
    assert audit_snapshot(snap).totals.queues_assigned == 100
    monkeypatch.setenv("MQBALANCE_MEMORY_BUDGET", str(100 * snapshot_model.QUEUE_BYTES - 1))
    with pytest.raises(SnapshotError, match="would need"):
        snapshot_from_dict(data, "big")


def test_one_pass_churn_skips_only_pairs_that_cannot_have_moved():
    """Pairs whose group and route are unchanged are not assigned again; every other kind of
    change (a member gone, the strategy switched with the same ids, a queue count or a broker
    changed, a new pair) is, and the per-pair churn equals the full comparison's."""

    def fleet(changes: dict[str, object]) -> dict:
        route = {"queueDatas": [{"brokerName": b, "readQueueNums": 8, "writeQueueNums": 8, "perm": 6} for b in "ab"]}
        topics = {t: json.loads(json.dumps(route)) for t in ("T1", "T2", "T3", "T4")}
        ids = [f"10.0.0.{i}@p" for i in range(5)]
        groups = {
            g: {"subscriptions": ["T1", "T2", "T3"], "strategy": "AVG", "connections": [{"clientId": c} for c in ids]}
            for g in ("same", "left", "switched", "routes")
        }
        if changes.get("left"):
            groups["left"]["connections"].pop(2)
        if changes.get("switched"):
            groups["switched"]["strategy"] = "AVG_BY_CIRCLE"
        if changes.get("routes"):
            topics["T2"]["queueDatas"][0]["readQueueNums"] = 6
            topics["T3"]["queueDatas"][1]["brokerName"] = "c"
            groups["routes"]["subscriptions"].append("T4")
        return {"topics": topics, "groups": groups}

    flags = {"left": True, "switched": True, "routes": True}
    before, now = snapshot_from_dict(fleet({}), "before"), snapshot_from_dict(fleet(flags), "now")
    full = churn_mod.churn(assign_snapshot(now), assign_snapshot(before))
    expected = {(g, t): m for g, t, m in zip(*(full.column(k).to_pylist() for k in ("group", "topic", "moved")))}
    pairs = churn_mod.with_previous_routes(now.pair_table(), before.pair_table())
    changed = churn_mod.changed_pairs(pairs, now.consumer_groups(), before.consumer_groups(), {})
    which = {
        (g, t) for g, t, c in zip(pairs["group"].to_pylist(), pairs["topic"].to_pylist(), changed.to_pylist()) if c
    }
    assert ("same", "T1") not in which and ("left", "T1") in which and ("switched", "T1") in which
    assert {("same", "T2"), ("same", "T3"), ("routes", "T2"), ("routes", "T3")} <= which
    assert ("routes", "T1") not in which and ("routes", "T4") not in which  # unchanged; new (nothing to compare)
    facts = pa.Table.from_batches(
        list(
            facts_mod.fact_blocks(
                pairs.to_batches(max_chunksize=5), now.consumer_groups(), (), before.consumer_groups()
            )
        ),
        schema=schemas.FACT_SCHEMA,
    )
    per_pair, _, _ = facts_mod.split_facts(facts)
    got = {(g, t): m for g, t, m in zip(*(per_pair.column(k).to_pylist() for k in ("group", "topic", "moved")))}
    assert {k: v for k, v in got.items() if v} == {k: v for k, v in expected.items() if v}
    assert got[("left", "T1")] > 0 and got[("switched", "T1")] > 0 and got[("same", "T1")] == 0


def _random_fleet(rng: random.Random, base: dict | None = None) -> dict:
    """A small fleet (or, from ``base``, the same fleet a while later: members gone or joined, ids
    duplicated, strategies switched, queue counts and brokers changed, groups broadcasting)."""
    if base is None:
        topics = {
            f"T{t}": {
                "queueDatas": [
                    {"brokerName": b, "readQueueNums": rng.randint(1, 6), "writeQueueNums": 6, "perm": 6}
                    for b in rng.sample(["a", "b", "c"], rng.randint(1, 3))
                ]
            }
            for t in range(4)
        }
        groups = {
            f"g{g}": {
                "subscriptions": rng.sample(sorted(topics), rng.randint(1, 4)),
                "strategy": rng.choice(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"]),
                "connections": [{"clientId": f"10.0.{g}.{i}@p"} for i in range(rng.randint(1, 6))],
            }
            for g in range(5)
        }
        return {"topics": topics, "groups": groups}
    fleet = json.loads(json.dumps(base))
    for name, group in fleet["groups"].items():
        change = rng.randrange(7)
        conns = group["connections"]
        if change == 0 and len(conns) > 1:
            conns.pop(rng.randrange(len(conns)))
        elif change == 1:
            conns.insert(rng.randrange(len(conns) + 1), {"clientId": f"10.9.9.{rng.randrange(50)}@{name}"})
        elif change == 2:
            conns.append({"clientId": rng.choice(conns)["clientId"]})  # a duplicated id
        elif change == 3:
            group["strategy"] = rng.choice(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"])
        elif change == 4:
            group["messageModel"] = "BROADCASTING"
    for topic in fleet["topics"].values():
        if rng.random() < 0.3:
            entry = rng.choice(topic["queueDatas"])
            entry["readQueueNums"] = rng.randint(1, 6)
        if rng.random() < 0.15:
            rng.choice(topic["queueDatas"])["brokerName"] = "d"
    return fleet


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32))
def test_one_pass_churn_is_the_full_comparison_on_random_fleets(seed: int) -> None:
    """The in-place comparison of aligned queues (with the full comparison for the rest) gives
    exactly the full comparison's moved queues per pair."""
    rng = random.Random(seed)
    first = _random_fleet(rng)
    before, now = snapshot_from_dict(first, "before"), snapshot_from_dict(_random_fleet(rng, first), "now")
    full = churn_mod.churn(assign_snapshot(now), assign_snapshot(before))
    expected = {(g, t): m for g, t, m in zip(*(full.column(k).to_pylist() for k in ("group", "topic", "moved"))) if m}
    pairs = churn_mod.with_previous_routes(now.pair_table(), before.pair_table())
    facts = pa.Table.from_batches(
        list(
            facts_mod.fact_blocks(
                pairs.to_batches(max_chunksize=3), now.consumer_groups(), (), before.consumer_groups()
            )
        ),
        schema=schemas.FACT_SCHEMA,
    )
    per_pair, _, _ = facts_mod.split_facts(facts)
    got = {(g, t): m for g, t, m in zip(*(per_pair.column(k).to_pylist() for k in ("group", "topic", "moved"))) if m}
    assert got == expected


def _rooms_fleet(idcs: list[str] | None = None) -> dict:
    """Two machine rooms' brokers; a MACHINE_ROOM group whose rooms the snapshot lacks (as a live
    snapshot does: running info names the strategy, not its consumeridcs) beside two groups with a
    duplicated id and an idle process, which the audit must still find."""
    route = [
        {"brokerName": "hz@b1", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6},
        {"brokerName": "sh@b2", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6},
    ]
    clients = [{"clientId": c, "strategy": "MACHINE_ROOM"} for c in "ab"]
    room: dict = {"subscriptions": ["T", "U"], "connections": clients}
    if idcs is not None:
        room["consumeridcs"] = idcs
    return {
        "topics": {"T": {"queueDatas": route}, "U": {"queueDatas": route[:1]}},
        "groups": {
            "room": room,
            "dup": {"subscriptions": ["T"], "connections": [{"clientId": "x"}, {"clientId": "x"}]},
            "idle": {"subscriptions": ["U"], "connections": [{"clientId": c} for c in "pqrstu"]},
        },
    }


def test_a_group_whose_strategy_settings_are_unknown_gets_a_finding_and_the_rest_is_audited():
    snap = snapshot_from_dict(_rooms_fleet(), "live")
    result = audit_snapshot(snap)
    mine = [f for f in result.findings if f.group == "room"]
    assert [(f.kind, f.topic, f.count) for f in mine] == [(FindingKind.SETTINGS_UNKNOWN, None, 12)]  # 8 of T + 4 of U
    assert mine[0].detail.startswith("strategy settings unknown: MACHINE_ROOM's consumer idcs are not in the snapshot")
    assert "12 queues of 2 topics not computed" in mine[0].detail and '"consumeridcs"' in mine[0].detail
    assert not FindingKind.SETTINGS_UNKNOWN.urgent
    # no row: neither unowned nor double-owned, not idle; not in the assignment either
    assert not [r for r in result.rows if r.group == "room"]
    assert not [r for r in assign_snapshot(snap).to_pylist() if r["group"] == "room"]
    t = result.totals
    assert (t.settings_unknown_groups, t.not_computed_queues, t.queues_assigned) == (1, 12, 8 + 4)
    assert (t.unowned_queues, t.idle_processes, t.processes) == (4, 2, 10)  # the duplicate's slot; "idle"'s 2
    # every other group is audited exactly as without the room group
    without = _rooms_fleet()
    del without["groups"]["room"]
    alone = audit_snapshot(snapshot_from_dict(without, "live"))
    assert [f for f in result.findings if f.group != "room"] == alone.findings
    assert result.rows == alone.rows
    assert t.to_dict() | {"groups": 2, "processes": 8, "settings_unknown_groups": 0, "not_computed_queues": 0} == (
        alone.totals.to_dict()
    )


def test_settings_unknown_in_the_assignment_table_the_reports_and_fail_on(tmp_path, capsys):
    snap = snapshot_from_dict(_rooms_fleet(), "live")
    result = audit_snapshot(snap)
    table = assignment_table(snap, result)
    assert table.summary.endswith("; not computed (strategy settings unknown) 12 queues in 1 groups")
    lines = {(x.group, x.topic): x.text for x in table.shown()}
    assert lines["room", "T"].split()[2:4] == ["8", "2"]
    assert lines["room", "T"].endswith("not computed: strategy settings unknown (MACHINE_ROOM's consumer idcs)")
    assert "missing route" not in lines["room", "U"]
    paths = write_outputs(result, tmp_path, source="live")
    findings = json.loads(paths["findings_json"].read_text())
    assert findings["totals"]["not_computed_queues"] == 12 and findings["totals"]["settings_unknown_groups"] == 1
    assert [f["group"] for f in findings["findings"] if f["kind"] == "settings-unknown"] == ["room"]
    assert "settings-unknown" in paths["report_md"].read_text()
    # the CLI's table says so too
    path = tmp_path / "live.json"
    path.write_text(json.dumps(_rooms_fleet()))
    assert main(["assign", str(path)]) == 0
    out = capsys.readouterr().out
    assert "not computed (strategy settings unknown) 12 queues in 1 groups" in out
    assert "settings-unknown" in FINDING_KINDS


def test_consumer_idcs_given_in_the_json_group_entry_compute_the_group_exactly():
    snap = snapshot_from_dict(_rooms_fleet(["hz"]), "edited")
    result = audit_snapshot(snap)
    assert result.count(FindingKind.SETTINGS_UNKNOWN) == 0 and result.totals.not_computed_queues == 0
    got = consumers_by_queue(assign_snapshot(snap))
    s = strategy("MACHINE_ROOM", consumer_idcs=["hz"])
    ids = sort_client_ids(["a", "b"])
    for topic in ("T", "U"):
        qs = sort_queues(_queues(snap, topic))
        want = {(q.broker_name, q.queue_id): [c for c in ids if q in s.allocate("room", c, qs, ids)] for q in qs}
        assert {(b, q): v for (g, t, b, q), v in got.items() if (g, t) == ("room", topic)} == want
    # the sh room's queues are nobody's, as Java's clients in room hz leave them
    assert [(f.topic, f.count) for f in result.findings if f.group == "room"] == [("T", 4)]
    # a connection's own idcs win; other strategies are left alone
    data = _rooms_fleet(["hz"])
    data["groups"]["room"]["connections"][1]["strategy"] = {"name": "MACHINE_ROOM", "consumeridcs": ["sh"]}
    data["groups"]["dup"]["consumeridcs"] = ["hz"]
    specs = {c.client_id: c.strategy for c in snapshot_from_dict(data).consumer_groups()["room"].connections}
    assert (specs["a"].consumer_idcs, specs["b"].consumer_idcs) == (("hz",), ("sh",))
    assert snapshot_from_dict(data).consumer_groups()["dup"].strategies[0].name is StrategyName.AVG


#: What a live snapshot keeps as the client reported it (:func:`mqbalance.fleet.rocketmq.live.as_reported`):
#: a custom strategy class (Java's running info gives the class; we keep its simple name), CONFIG
#: (its queue list is not in the running info) and MACHINE_ROOM_NEARBY (nor its inner strategy and resolver).
REPORTED = {
    "RoomAllocator": "not a strategy mqbalance knows",
    "CONFIG": "CONFIG's queue list is not in a client's running info",
    "MACHINE_ROOM_NEARBY": "names neither MACHINE_ROOM_NEARBY's inner strategy nor its machine room resolver",
}


def _reported_fleet(name: str | None) -> dict:
    """:func:`_rooms_fleet` with the room group given its idcs, plus a group whose two clients report
    ``name`` (kept as reported) beside one on AVG; ``None``: without that group."""
    fleet = _rooms_fleet(["hz"])
    if name is not None:
        clients = [{"clientId": c, "strategy": {"reported": name}} for c in "mn"]
        fleet["groups"]["custom"] = {"subscriptions": ["T", "U"], "connections": [*clients, {"clientId": "o"}]}
    return fleet


@pytest.mark.parametrize("name", REPORTED)
def test_a_strategy_kept_as_reported_is_not_computed_never_audited_as_avg(name):
    snap = snapshot_from_dict(_reported_fleet(name), "live")
    group = snap.consumer_groups()["custom"]
    assert [c.strategy.display_name for c in group.connections] == [name, name, "AVG"]
    result = audit_snapshot(snap)
    mine = [f for f in result.findings if f.group == "custom"]
    assert [(f.kind, f.count) for f in mine] == [(FindingKind.STRATEGY_MISMATCH, 2), (FindingKind.STRATEGY_UNKNOWN, 12)]
    detail = mine[1].detail
    assert detail.startswith(f"strategy unknown: clients run {name} (2 clients), as reported: ")
    assert REPORTED[name] in detail and detail.endswith("12 queues of 2 topics not computed")
    assert not FindingKind.STRATEGY_UNKNOWN.urgent
    # not computed: no row, no assignment, not idle (AVG over three clients of 8 queues would have none idle,
    # and with 4 queues of U one idle: neither is claimed)
    assert not [r for r in result.rows if r.group == "custom"]
    assert not [r for r in assign_snapshot(snap).to_pylist() if r["group"] == "custom"]
    t = result.totals
    assert (t.strategy_unknown_groups, t.settings_unknown_groups, t.not_computed_queues) == (1, 0, 12)
    # every other group is audited exactly as without it
    alone = audit_snapshot(snapshot_from_dict(_reported_fleet(None), "live"))
    assert [f for f in result.findings if f.group != "custom"] == alone.findings
    assert result.rows == alone.rows
    assert t.to_dict() | {"groups": 3, "processes": 10, "strategy_mismatched_groups": 0} == alone.totals.to_dict() | {
        "strategy_unknown_groups": 1,
        "not_computed_queues": 12,
    }
    table = assignment_table(snap, result)
    assert table.summary.endswith("; not computed (strategy unknown) 12 queues in 1 groups")
    line = {(x.group, x.topic): x.text for x in table.shown()}["custom", "T"]
    assert line.endswith(f"not computed: strategy unknown ({name}, as reported)")


def test_a_group_default_kept_as_reported_and_a_broadcasting_group():
    fleet = _reported_fleet(None)
    fleet["groups"]["cfg"] = {
        "subscriptions": ["T"],
        "strategy": {"reported": "CONFIG"},
        "connections": [{"clientId": "k"}],
    }
    fleet["groups"]["all"] = {
        "subscriptions": ["T"],
        "messageModel": "BROADCASTING",
        "connections": [{"clientId": "b", "strategy": {"reported": "RoomAllocator"}}],
    }
    result = audit_snapshot(snapshot_from_dict(fleet, "live"))
    assert [(f.kind, f.count) for f in result.findings if f.group == "cfg"] == [(FindingKind.STRATEGY_UNKNOWN, 8)]
    # a broadcasting client consumes every queue whatever its strategy: computed
    assert not [f for f in result.findings if f.group == "all"]
    assert [(r.group, r.units) for r in result.rows if r.group == "all"] == [("all", 8)]


def test_a_reported_strategy_survives_json_and_parquet_round_trips(tmp_path, monkeypatch):
    path = tmp_path / "live.json"
    path.write_text(json.dumps(_reported_fleet("RoomAllocator")))
    snap = load_snapshot(path)
    before = audit_snapshot(snap)
    write_parquet(snap, tmp_path / "pq")
    again = load_snapshot(tmp_path / "pq")
    strategies = [c.strategy for c in again.consumer_groups()["custom"].connections]
    assert strategies == [snapshot_model.ReportedStrategy("RoomAllocator")] * 2 + [
        snapshot_model.StrategySpec.parse("AVG")
    ]
    assert again.connections.column("strategy_reported").to_pylist() == [
        True if s == "RoomAllocator" else None for s in again.connections.column("strategy").to_pylist()
    ]
    after = audit_snapshot(again)
    assert (after.findings, after.rows, after.totals) == (before.findings, before.rows, before.totals)
    # the row-by-row path (taken when a row is bad or unusual) reads it the same
    monkeypatch.setattr("mqbalance.fleet.rocketmq.files.columnar_tables", lambda *args: None)
    slow = load_snapshot(tmp_path / "pq")
    assert [c.strategy for c in slow.consumer_groups()["custom"].connections] == strategies
    assert slow.connections.equals(again.connections)


def test_parquet_files_without_the_reported_column_read_as_before(tmp_path):
    import pyarrow.parquet as pq

    snap = snapshot_from_dict(_reported_fleet(None), "old")
    write_parquet(snap, tmp_path)
    table = pq.read_table(tmp_path / "connections.parquet").drop_columns(["strategy_reported"])
    pq.write_table(table, tmp_path / "connections.parquet")
    old = load_snapshot(tmp_path)
    assert old.connections.column("strategy_reported").null_count == old.connections.num_rows
    assert audit_snapshot(old).findings == audit_snapshot(snap).findings


@pytest.mark.parametrize(
    "config,message",
    [
        ({"reported": ""}, r"strategy\.reported: expected the reported strategy name"),
        ({"reported": 7}, r"strategy\.reported: expected the reported strategy name"),
        ({"reported": "avg_by_circle"}, "is a strategy a fleet audit computes"),
        ({"reported": "X", "name": "AVG"}, "a reported strategy takes no other field, got 'name'"),
    ],
)
def test_bad_reported_strategies_name_the_field(config, message):
    fleet = {
        "topics": {},
        "groups": {"g": {"subscriptions": [], "connections": [{"clientId": "c", "strategy": config}]}},
    }
    with pytest.raises(SnapshotError, match=message) as info:
        snapshot_from_dict(fleet, "snap.json")
    assert "groups['g'].connections[0].strategy" in str(info.value)


def test_a_reported_flag_of_another_type_in_parquet_is_named(tmp_path):
    import pyarrow.parquet as pq

    write_parquet(snapshot_from_dict(_reported_fleet("CONFIG"), "x"), tmp_path)
    table = pq.read_table(tmp_path / "connections.parquet")
    at = table.schema.get_field_index("strategy_reported")
    table = table.set_column(at, "strategy_reported", table.column(at).cast(pa.string()))
    pq.write_table(table, tmp_path / "connections.parquet")
    with pytest.raises(SnapshotError, match=r"strategy_reported: expected a bool or null, got 'true'"):
        load_snapshot(tmp_path)


@pytest.mark.parametrize(
    "idcs,message",
    [
        ("hz", r"groups\['room'\].consumeridcs: expected list, got 'hz'"),
        (["hz", 3], r"groups\['room'\].consumeridcs\[1\]: expected a machine room name \(str\), got 3"),
    ],
)
def test_bad_group_consumer_idcs_name_the_field(idcs, message):
    with pytest.raises(SnapshotError, match=message):
        snapshot_from_dict(_rooms_fleet(idcs), "f.json")
