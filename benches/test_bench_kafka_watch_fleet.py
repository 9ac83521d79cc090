"""The small version of ``benches/kafka_watch_fleet.py`` (``make test``): on the real Apache Kafka
broker, 3 classic groups × 3 members formed from this process over 2 topics × 10 partitions, the
watcher's ticks measured as the benchmark measures them and checked for what they must say — every
group Stable with its generation, members and owners, committed and log-end offsets; nothing
written but the tick's row when nothing changed; every member's leave once the fleet leaves — not
for speed. The broker's OffsetFetch answers (v8, v9) decoded by our decoder equal kafka-python's
decoding of the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from kafka.errors import NoError
from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse
from kafka.structs import OffsetAndMetadata, TopicPartition

from kafka_java_cluster import KafkaJavaBroker
from kafka_watch_fleet import BROKER_SETTINGS, Fleet, check, make_topics, measure, produce
from mqbalance.fleet.kafka.wire import RawOffsetFetchRequest, committed_offsets, decode_offset_fetch
from mqbalance.history.kafka_collector import KafkaCollector
from mqbalance.history.schema import TABLES

pytestmark = pytest.mark.java


def assert_raw_answers_decode_as_kafka_python_does(broker: KafkaJavaBroker, groups: list[str]) -> None:
    """OffsetFetch v8 and v9 sent through kafka-python's connection (the watcher's way), the body
    kept as bytes: our columns and the watcher's dict equal kafka-python's decoding of the bytes;
    a group nobody committed for answers with no topics."""
    admin = broker.admin()
    group = OffsetFetchRequest.OffsetFetchRequestGroup
    asked = [*groups, "never-committed"]
    for version in (8, 9):

        async def send(v: int = version) -> Any:
            request = RawOffsetFetchRequest(groups=[group(group_id=g, topics=None) for g in asked],
                                            min_version=v, max_version=v)  # fmt: skip
            return await admin._manager.send(request)

        answer = admin._manager.run(send)
        assert answer.version == version
        theirs = OffsetFetchResponse.decode(answer.data, version=version)
        ours = decode_offset_fetch(answer.data, version=version)
        assert ours.groups == [d.group_id for d in theirs.groups] and sorted(ours.groups) == sorted(asked)
        rows = [
            (d.group_id, t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.error_code)
            for d in theirs.groups
            for t in d.topics
            for p in t.partitions
        ]
        mine = list(zip([ours.groups[i] for i in ours.group.tolist()], [ours.topics[i] for i in ours.topic.tolist()],
                        ours.partition.tolist(), ours.committed_offset.tolist(), ours.leader_epoch.tolist(),
                        ours.error_code.tolist(), strict=True))  # fmt: skip
        assert mine == rows and len(rows) == 3 * 20
        committed = committed_offsets(ours)
        assert committed == {(g, t, "", p): off for g, t, p, off, _e, _c in rows} and set(committed.values()) == {2}


def test_watch_ticks_on_a_small_fleet_of_real_classic_groups(tmp_path: Path) -> None:
    with KafkaJavaBroker(settings=BROKER_SETTINGS) as broker:
        partitions, _s = make_topics(broker, 2, 10)
        ends, _s = produce(broker.bootstrap, partitions, 2)
        assert set(ends.values()) == {2}
        fleet = Fleet(broker.bootstrap, partitions, groups=3, members=3, end_offsets=ends, session_timeout_s=600)
        fleet.build()
        assert [len(g.members) for g in fleet.groups.values()] == [3, 3, 3]
        # range over 2 × 10 partitions: 4 + 3 + 3 per topic, sorted by member id
        assert all(sorted(sum(map(len, a.values())) for a in g.assignment.values()) == [6, 6, 8]
                   for g in fleet.groups.values())  # fmt: skip
        try:
            got = measure(broker.bootstrap, fleet, tmp_path / "h", ticks=2, rounds=1, say=lambda _m: None)
        finally:
            fleet.leave()
        assert got["correct"], got["differences"]
        assert got["correct_after"]
        assert got["seen"] == {"groups": 3, "members": 9, "partitions_owned": 60}
        assert got["second_tick_events"] == 0
        row = got["rounds"][0]
        for kind in ("membership", "with_offsets"):
            assert row[kind]["events"] == [0]
            assert max(row[kind]["bytes_written"]) < 1024
        assert row["membership"]["kinds"] == ["membership"] and row["with_offsets"]["kinds"] == ["both"]
        # the broker's OffsetFetch answer of every group, read by our decoder and by kafka-python
        assert row["floor"]["same_as_kafka_python"] and row["floor"]["rows"] == 3 * 20
        assert_raw_answers_decode_as_kafka_python_does(broker, sorted(fleet.groups))
        # a watcher restarted on the dataset starts from the fleet as it was; after the leave, its
        # first tick says every member left and every group is Empty
        c = KafkaCollector(broker.bootstrap, tmp_path / "h", interval=1, offsets_interval=10**6, timeout=30.0)
        try:
            assert not check(c.state, fleet, offsets=True)
            c.tick()
            assert {v.state for g, v in c.state.groups.items() if g in fleet.groups} == {"Empty"}
            assert not [k for k in c.state.members if k[0] in fleet.groups]
            # committed offsets that move between ticks reading offsets, and ticks where nothing
            # moved (the answer not decoded again, the offsets kept): each reading is the broker's
            g, t, p = sorted(fleet.groups)[0], sorted(partitions)[0], 0
            q = (g, t, "", p)
            c.offsets_interval = 0  # every tick reads offsets
            for offset in (1, 1, 0, 0):
                errors = broker.admin().alter_group_offsets(g, {TopicPartition(t, p): OffsetAndMetadata(offset)})
                assert set(errors.values()) == {NoError}, errors
                c.tick()
                assert c.state.offsets[q] == (offset, 2)
                assert sum(1 for k, v in c.state.offsets.items() if k[0] in fleet.groups and v == (2, 2)) == 3 * 20 - 1
            # deleted groups are no longer listed, and their coordinator confirms they are gone
            broker.admin().delete_groups(sorted(fleet.groups))
            c.tick()
            assert not fleet.groups.keys() & c.state.groups.keys()
        finally:
            c.close()
        files = sorted((tmp_path / "h" / "groups").glob("date=*/hour=*/part-*.parquet"))
        rows = ds.dataset(files, schema=TABLES["groups"], format="parquet").to_table().to_pylist()
        gone = [r["group"] for r in rows if r["event"] == "disappear"]
        assert sorted(gone) == sorted(fleet.groups)
