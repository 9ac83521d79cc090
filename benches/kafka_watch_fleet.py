"""The ``mqbalance watch --bootstrap`` tick on a fleet of real classic groups — 100 groups × 10
members × 1,000 partitions by default — on the real Apache Kafka broker (the ``kafka_java`` broker
of the tests: 4.4.0, KRaft, one node), without 1,000 member processes.

* Topics: ``--topics`` × ``--partitions-per-topic`` (10 × 100: every group subscribes to all of
  them, 1,000 partitions), created in one CreateTopics; ``--records`` records produced to every
  partition (log-end offsets non-zero).
* Members (:class:`Fleet`): every member is one TCP connection of this process speaking the classic
  group protocol itself (kafka-python's protocol classes, asyncio): JoinGroup (the
  ``MEMBER_ID_REQUIRED`` round, then the join), the leader assigns the partitions with ``range``
  (:func:`mqbalance.kafka.assignor`) and sends them in its SyncGroup, every member heartbeats until
  its whole group has synced in one generation (a member that hears of a rebalance joins again, as
  a client does), then commits its partitions' offsets at their log end (OffsetCommit with its
  member id and generation) and closes its connection: a classic membership outlives the
  connection, and the session timeout (``--session-timeout-s``, the broker's
  ``group.max.session.timeout.ms`` raised by the benchmark) keeps every member for the whole
  measurement without heartbeats. ``--parallel`` groups form at a time; a progress line on stderr.
* The watcher's ticks (:class:`~mqbalance.history.kafka_collector.KafkaCollector`, in process, as
  ``watch`` runs it): the first (a checkpoint, offsets read), then ``--ticks`` unchanged
  membership ticks (``watch``'s every-``--interval`` tick), ``--ticks`` unchanged ticks that read
  offsets too (its every-``--offsets-interval`` tick) and ``--ticks`` of those with the last
  reading forgotten (``with_offsets_decoded``: the answer decoded and the offsets built again, as
  when every committed offset moved), ``--rounds`` times: median and spread of the
  wall time of ``tick()`` (the reading, the comparison and the write), of the watcher thread's and
  the whole process's CPU (kafka-python decodes on its own thread), bytes written, requests; the
  load average beside them; and the floor of the offsets tick, the same run: the OffsetFetch of
  every group alone (round trip to its last byte), kafka-python's decoding of its answer and ours
  (the same rows, checked). The
  first tick's state is checked against the fleet: every group Stable, range, its generation, its
  members' ids and client ids, every partition's owner and committed and log-end offsets.
  ``--baseline FILE`` ticks another ``kafka_collector.py`` (``main``'s) right after ours in every
  round, on the same fleet; ``--profile`` writes cProfile tops of the first tick and of each kind;
  ``--first-ticks N`` then times N pairs of first ticks of fresh watchers, with kafka-python's
  pure-Python CRC-32C of record batches and with ours.

    python benches/kafka_watch_fleet.py --out benches/kafka_watch_fleet_results
    git show main:python/mqbalance/history/kafka_collector.py > /tmp/main_collector.py
    python benches/kafka_watch_fleet.py --baseline /tmp/main_collector.py
    python benches/kafka_watch_fleet.py --bootstrap HOST:PORT ...    # a broker of yours (session
                                                                     # timeout within its maximum)

Prints one JSON object and writes ``results.json`` to ``--out``. Needs the Java harness (``make java``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from kafka.protocol.consumer.group import (  # noqa: E402
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription  # noqa: E402

from mqbalance.history.kafka_collector import KafkaCollector, KafkaState  # noqa: E402
from mqbalance.kafka import Subscription, assignor  # noqa: E402

#: request versions (Apache Kafka 4.4.0 answers all of them; kafka-python 3.0.12 encodes them)
JOIN_V, SYNC_V, HEARTBEAT_V, COMMIT_V, LEAVE_V, PRODUCE_V = 9, 5, 4, 8, 5, 9
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID = 79, 27, 22, 25
#: the broker settings of the benchmark's own broker: idle members stay for an hour
BROKER_SETTINGS = {"group.max.session.timeout.ms": "3600000"}


class GroupProtocolError(RuntimeError):
    """The broker answered a group request with an error the fleet does not expect."""


class Connection:
    """One TCP connection speaking the Kafka protocol, one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self.reader, self.writer, self.client_id = reader, writer, client_id
        self.correlation = 0

    @classmethod
    async def open(cls, bootstrap: str, client_id: str) -> Connection:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer, client_id)

    async def call_raw(self, request: Any, version: int) -> bytes:
        """The answer's bytes (its header included), undecoded."""
        self.correlation += 1
        request.with_header(correlation_id=self.correlation, client_id=self.client_id)
        self.writer.write(request.encode(version=version, header=True, framed=True))
        await self.writer.drain()
        (size,) = struct.unpack(">i", await self.reader.readexactly(4))
        return await self.reader.readexactly(size)

    async def call(self, request: Any, response_class: Any, version: int) -> Any:
        raw = await self.call_raw(request, version)
        response = response_class.decode(raw, version=version, header=True)
        if response.header.correlation_id != self.correlation:
            raise GroupProtocolError(f"correlation id {response.header.correlation_id}, expected {self.correlation}")
        return response

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


@dataclass
class FleetGroup:
    """A formed group: its generation, members (member id -> client id) and the leader's assignment
    (member id -> topic -> partitions)."""

    name: str
    generation: int = -1
    members: dict[str, str] = field(default_factory=dict)
    assignment: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    joins: int = 0


def range_assignment(metadata: Mapping[str, bytes], partitions: Mapping[str, int]) -> dict[str, dict[str, list[int]]]:
    """The leader's work: the members' subscriptions decoded, ``range`` over them."""
    subs = {m: Subscription(ConsumerProtocolSubscription.decode(b).topics) for m, b in metadata.items()}
    out: dict[str, dict[str, list[int]]] = {m: {} for m in subs}
    for m, tps in assignor("range").assign(dict(partitions), subs).items():
        for tp in tps:
            out[m].setdefault(tp.topic, []).append(tp.partition)
    return out


def encode_assignment(parts: Mapping[str, list[int]]) -> bytes:
    tps = [ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=ps) for t, ps in sorted(parts.items())]
    return bytes(ConsumerProtocolAssignment(version=0, assigned_partitions=tps, user_data=b"").encode())


class Fleet:
    """``groups`` classic groups of ``members`` members each, subscribed to every topic of
    ``partitions`` (topic -> count), formed from this process (see the module docs)."""

    def __init__(
        self,
        bootstrap: str,
        partitions: Mapping[str, int],
        *,
        groups: int,
        members: int,
        end_offsets: Mapping[tuple[str, int], int],
        session_timeout_s: float = 3600.0,
        parallel: int = 10,
        prefix: str = "fleet",
        say: Callable[[str], None] = lambda _m: None,
    ) -> None:
        self.bootstrap, self.partitions = bootstrap, dict(partitions)
        self.n_groups, self.n_members = groups, members
        self.end_offsets = dict(end_offsets)
        self.session_ms = int(session_timeout_s * 1000)
        self.parallel, self.prefix, self.say = parallel, prefix, say
        self.groups: dict[str, FleetGroup] = {}
        self.metadata = bytes(
            ConsumerProtocolSubscription(version=0, topics=sorted(partitions), user_data=b"").encode()
        )
        self.requests = 0
        self.done = {"synced": 0, "committed": 0}
        self.seconds = 0.0

    def build(self) -> Fleet:
        t0 = time.monotonic()
        asyncio.run(self._build())
        self.seconds = time.monotonic() - t0
        return self

    async def _build(self) -> None:
        gate = asyncio.Semaphore(self.parallel)
        t0 = time.monotonic()
        progress = asyncio.create_task(self._progress(t0))
        try:
            await asyncio.gather(*(self._one(f"{self.prefix}-{g:03d}", gate) for g in range(self.n_groups)))
        finally:
            progress.cancel()
        self._say_progress(t0, end="\n")

    async def _progress(self, t0: float) -> None:
        while True:
            await asyncio.sleep(1.0)
            self._say_progress(t0)

    def _say_progress(self, t0: float, end: str = "\r") -> None:
        self.say(
            f"fleet: {self.done['synced']}/{self.n_groups} groups synced, {self.done['committed']}/{self.n_groups} "
            f"committed, {self.requests:,} requests, {time.monotonic() - t0:.0f} s{end}"
        )

    async def _one(self, name: str, gate: asyncio.Semaphore) -> None:
        async with gate:
            group = self.groups[name] = FleetGroup(name)
            conns = [await Connection.open(self.bootstrap, f"{name}-m{i}") for i in range(self.n_members)]
            try:
                synced: dict[int, tuple[int, str, dict[str, list[int]], int]] = {}
                await asyncio.gather(*(self._member(group, conns[i], i, synced) for i in range(self.n_members)))
                generations = {s[0] for s in synced.values()}
                assert len(generations) == 1 and len(synced) == self.n_members, (name, synced)
                group.generation = generations.pop()
                group.members = {s[1]: conns[i].client_id for i, s in synced.items()}
                group.assignment = {s[1]: s[2] for s in synced.values()}
                group.joins = sum(s[3] for s in synced.values())
                self.done["synced"] += 1
                await asyncio.gather(*(self._commit(group, conns[i], synced[i][1]) for i in range(self.n_members)))
                self.done["committed"] += 1
            finally:
                for c in conns:
                    await c.close()

    async def _member(
        self, group: FleetGroup, conn: Connection, i: int, synced: dict[int, tuple[int, str, dict[str, list[int]], int]]
    ) -> None:
        member_id, joins = "", 0
        while True:
            joins += 1
            join = await self._call(
                conn,
                JoinGroupRequest(
                    group_id=group.name,
                    session_timeout_ms=self.session_ms,
                    rebalance_timeout_ms=120_000,
                    member_id=member_id,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=self.metadata)],
                    reason=None,
                ),
                JoinGroupResponse,
                JOIN_V,
            )
            if join.error_code == MEMBER_ID_REQUIRED:
                member_id = join.member_id
                continue
            if join.error_code:
                raise GroupProtocolError(f"{group.name}: JoinGroup error {join.error_code}")
            member_id, generation = join.member_id, join.generation_id
            assignments = []
            if join.leader == member_id:
                plan = range_assignment({m.member_id: bytes(m.metadata) for m in join.members}, self.partitions)
                assignments = [
                    SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=encode_assignment(parts))
                    for m, parts in plan.items()
                ]
            sync = await self._call(
                conn,
                SyncGroupRequest(
                    group_id=group.name,
                    generation_id=generation,
                    member_id=member_id,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocol_name="range",
                    assignments=assignments,
                ),
                SyncGroupResponse,
                SYNC_V,
            )
            if sync.error_code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION):
                continue
            if sync.error_code == UNKNOWN_MEMBER_ID:
                member_id = ""
                continue
            if sync.error_code:
                raise GroupProtocolError(f"{group.name}: SyncGroup error {sync.error_code}")
            got = ConsumerProtocolAssignment.decode(bytes(sync.assignment))
            mine = {tp.topic: sorted(tp.partitions) for tp in got.assigned_partitions}
            synced[i] = (generation, member_id, mine, joins)
            # heartbeat until the whole group has synced in one generation (or rejoin)
            while not (len(synced) == self.n_members and len({s[0] for s in synced.values()}) == 1):
                await asyncio.sleep(0.3)
                hb = await self._call(
                    conn,
                    HeartbeatRequest(
                        group_id=group.name, generation_id=generation, member_id=member_id, group_instance_id=None
                    ),
                    HeartbeatResponse,
                    HEARTBEAT_V,
                )
                if hb.error_code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION):
                    del synced[i]
                    break
                if hb.error_code:
                    raise GroupProtocolError(f"{group.name}: Heartbeat error {hb.error_code}")
            else:
                return

    async def _commit(self, group: FleetGroup, conn: Connection, member_id: str) -> None:
        P = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
        topics = [
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name=t,
                partitions=[
                    P(partition_index=p, committed_offset=self.end_offsets[(t, p)], committed_leader_epoch=-1,
                      committed_metadata="")
                    for p in ps
                ],
            )
            for t, ps in sorted(group.assignment[member_id].items())
        ]  # fmt: skip
        response = await self._call(
            conn,
            OffsetCommitRequest(
                group_id=group.name,
                generation_id_or_member_epoch=group.generation,
                member_id=member_id,
                group_instance_id=None,
                topics=topics,
            ),
            OffsetCommitResponse,
            COMMIT_V,
        )
        errors = {p.error_code for t in response.topics for p in t.partitions} - {0}
        if errors:
            raise GroupProtocolError(f"{group.name}: OffsetCommit errors {sorted(errors)}")

    async def _call(self, conn: Connection, request: Any, response_class: Any, version: int) -> Any:
        self.requests += 1
        return await conn.call(request, response_class, version)

    def leave(self) -> None:
        """Every member leaves (one LeaveGroup per group, all its members)."""

        async def leave_all() -> None:
            conn = await Connection.open(self.bootstrap, f"{self.prefix}-leave")
            try:
                for g in self.groups.values():
                    ids = [LeaveGroupRequest.MemberIdentity(member_id=m, group_instance_id=None) for m in g.members]
                    if ids:
                        await conn.call(LeaveGroupRequest(group_id=g.name, members=ids), LeaveGroupResponse, LEAVE_V)
            finally:
                await conn.close()

        asyncio.run(leave_all())


# --- the fleet's topics ------------------------------------------------------------------------------


def make_topics(broker: Any, topics: int, per_topic: int, prefix: str = "fleet") -> tuple[dict[str, int], float]:
    """``topics`` topics of ``per_topic`` partitions in one CreateTopics, every partition led; the seconds it took."""
    from kafka.admin import NewTopic

    from server_process import wait_for

    names = {f"{prefix}-t{t:02d}": per_topic for t in range(topics)}
    admin = broker.admin()
    t0 = time.monotonic()
    admin.create_topics([NewTopic(n, per_topic, 1) for n in names])

    def led() -> bool:
        described = admin.describe_topics(list(names))
        return len(described) == len(names) and all(
            not d["error_code"]
            and len(d["partitions"]) == per_topic
            and all(p["leader_id"] >= 0 for p in d["partitions"])
            for d in described
        )

    wait_for(f"{topics} topics of {per_topic} partitions with leaders", led, timeout=300)
    return names, time.monotonic() - t0


def produce(bootstrap: str, partitions: Mapping[str, int], records: int) -> tuple[dict[tuple[str, int], int], float]:
    """``records`` records to every partition (one Produce per topic, acks=1, from one connection:
    kafka-python 3.0.12's producer left batches of a 1,000-partition flush unanswered here); the
    log-end offsets (ListOffsets) and the seconds it took."""
    from kafka import KafkaAdminClient
    from kafka.protocol.consumer import OffsetSpec
    from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
    from kafka.record.memory_records import MemoryRecordsBuilder
    from kafka.structs import TopicPartition

    def batch(p: int) -> bytes:
        builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
        now = int(time.time() * 1000)
        for r in range(records):
            builder.append(now, f"{p}-{r}".encode(), b"x" * 64)
        builder.close()
        return bytes(builder.buffer())

    async def send_all() -> None:
        conn = await Connection.open(bootstrap, "fleet-producer")
        try:
            todo = {(t, p) for t, n in partitions.items() for p in range(n)}
            deadline = time.monotonic() + 120
            while todo:  # a new topic's partitions may not lead yet (NOT_LEADER_OR_FOLLOWER): again
                failed: set[int] = set()
                for t in sorted({t for t, _p in todo}):
                    ps = sorted(p for tt, p in todo if tt == t)
                    data = ProduceRequest.TopicProduceData(
                        name=t,
                        partition_data=[ProduceRequest.TopicProduceData.PartitionProduceData(index=p, records=batch(p))
                                        for p in ps],
                    )  # fmt: skip
                    response = await conn.call(
                        ProduceRequest(transactional_id=None, acks=1, timeout_ms=60_000, topic_data=[data]),
                        ProduceResponse,
                        PRODUCE_V,
                    )
                    for r in response.responses:
                        for pr in r.partition_responses:
                            if pr.error_code == 0:
                                todo.discard((r.name, pr.index))
                            else:
                                failed.add(pr.error_code)
                if todo and (failed - {3, 6} or time.monotonic() > deadline):
                    raise GroupProtocolError(f"Produce: errors {sorted(failed)} on {len(todo)} partitions")
                if todo:
                    await asyncio.sleep(0.5)
        finally:
            await conn.close()

    t0 = time.monotonic()
    if records:
        asyncio.run(send_all())
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60_000)
    try:
        tps = [TopicPartition(t, p) for t, n in partitions.items() for p in range(n)]
        latest = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
    finally:
        admin.close()
    return {(tp.topic, tp.partition): o.offset for tp, o in latest.items()}, time.monotonic() - t0


# --- the watcher's ticks ---------------------------------------------------------------------------------


def check(state: KafkaState, fleet: Fleet, *, offsets: bool) -> list[str]:
    """What the watcher's state says against what the fleet did: a list of differences (empty: right)."""
    wrong: list[str] = []
    topics = tuple(sorted(fleet.partitions))
    for name, g in fleet.groups.items():
        v = state.groups.get(name)
        if v is None:
            wrong.append(f"{name}: not seen")
            continue
        seen = (v.group_type, v.state, v.protocol_type, v.strategy, v.subscriptions, v.generation)
        want = ("classic", "Stable", "consumer", "range", topics, g.generation)
        if seen != want:
            wrong.append(f"{name}: {seen} != {want}")
        members = {k[1]: m.client_id for k, m in state.members.items() if k[0] == name}
        if members != g.members:
            wrong.append(f"{name}: members {sorted(members.values())} != {sorted(g.members.values())}")
        for member, parts in g.assignment.items():
            for t, ps in parts.items():
                for p in ps:
                    owner = state.ownership.get((name, t, "", p))
                    if owner != (member, 1):
                        wrong.append(f"{name} {t}/{p}: owner {owner}, assigned to {member}")
                    if offsets:
                        end = fleet.end_offsets[(t, p)]
                        got = state.offsets.get((name, t, "", p))
                        if got != (end, end):
                            wrong.append(f"{name} {t}/{p}: offsets {got}, committed and log end {end}")
        owned = sum(1 for q in state.ownership if q[0] == name)
        if owned != sum(fleet.partitions.values()):
            wrong.append(f"{name}: {owned} partitions in the state")
    return wrong


def _stats(values: list[float], digits: int = 1) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), digits),
        "min": round(ordered[0], digits),
        "p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], digits),
        "max": round(ordered[-1], digits),
        "n": len(ordered),
    }


def _forget_offsets(c: KafkaCollector) -> None:
    """Drop what the watcher kept of its last offsets reading (the OffsetFetch answers' bytes, the
    basis of its offsets): the next tick decodes and builds them as when every committed offset
    moved (without the rows a move writes)."""
    c._offset_answers.clear()
    c._offsets_basis = (None, None, None, None)


def _ticks(c: KafkaCollector, n: int, before: Callable[[KafkaCollector], None] | None = None) -> dict[str, Any]:
    """``n`` ticks: wall time, the watcher thread's CPU, the process's CPU (kafka-python decodes
    answers on its own network thread; nothing else runs in this process meanwhile), bytes, events,
    requests. ``before``: called before each tick, outside the timing."""
    wall, cpu, process, observe, written, events, kinds = [], [], [], [], [], [], []
    for _ in range(n):
        if before is not None:
            before(c)
        t, tc, tp = time.perf_counter(), time.thread_time(), time.process_time()
        r = c.tick()
        cpu.append((time.thread_time() - tc) * 1000)
        process.append((time.process_time() - tp) * 1000)
        wall.append((time.perf_counter() - t) * 1000)
        observe.append(r.duration_s * 1000)
        written.append(r.bytes_written)
        events.append(r.events)
        kinds.append(r.kind)
    from mqbalance.history.writer import read_ticks

    requests = [int(x) for x in read_ticks(c.writer.root).column("requests").to_pylist()[-n:]]
    return {
        "wall_ms": _stats(wall),
        "read_and_compare_ms": _stats(observe),
        "thread_cpu_ms": _stats(cpu),
        "process_cpu_ms": _stats(process),
        "bytes_written": sorted(set(written)),
        "events": sorted(set(events)),
        "requests": sorted(set(requests)),
        "kinds": sorted(set(kinds)),
    }


def offset_fetch_floor(bootstrap: str, groups: list[str], n: int) -> dict[str, Any]:
    """What no watcher reading committed offsets with OffsetFetch avoids: ``n`` OffsetFetch v8 of
    every group (one request, as the watcher sends it) on a connection of its own, timed to the
    last byte of the answer (the broker's work and the transfer); the decoding of that answer by
    kafka-python (``main``'s watcher: its client decodes it on its network thread) and by ours
    (:func:`~mqbalance.fleet.kafka.wire.decode_offset_fetch`, then the watcher's dict of committed
    offsets, :func:`~mqbalance.fleet.kafka.wire.committed_offsets`); ``same_as_kafka_python``:
    both read the same rows (every group, topic, partition, offset, epoch, error code)."""
    import io

    from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse

    from mqbalance.fleet.kafka.wire import committed_offsets, decode_offset_fetch

    group = OffsetFetchRequest.OffsetFetchRequestGroup

    async def fetch() -> tuple[list[float], bytes]:
        conn = await Connection.open(bootstrap, "fleet-floor")
        times, raw = [], b""
        try:
            for _ in range(n):
                request = OffsetFetchRequest(groups=[group(group_id=g, topics=None) for g in groups])
                t = time.perf_counter()
                raw = await conn.call_raw(request, 8)
                times.append((time.perf_counter() - t) * 1000)
        finally:
            await conn.close()
        return times, raw

    times, raw = asyncio.run(fetch())
    decode, ours, read = [], [], []
    theirs: Any = None
    for _ in range(n):
        t = time.perf_counter()
        theirs = OffsetFetchResponse.decode(raw, version=8, header=True)
        decode.append((time.perf_counter() - t) * 1000)
    head = io.BytesIO(raw)
    OffsetFetchResponse.parse_header(head, version=8)
    body = raw[head.tell() :]
    columns: Any = None
    for _ in range(n):
        t = time.perf_counter()
        columns = decode_offset_fetch(body, version=8)
        ours.append((time.perf_counter() - t) * 1000)
        committed_offsets(columns)
        read.append((time.perf_counter() - t) * 1000)
    rows = [
        (
            d.group_id,
            d.error_code,
            t.name,
            p.partition_index,
            p.committed_offset,
            p.committed_leader_epoch,
            p.error_code,
        )
        for d in theirs.groups
        for t in d.topics
        for p in t.partitions
    ]
    mine = list(
        zip(
            [columns.groups[i] for i in columns.group.tolist()],
            [int(columns.group_errors[i]) for i in columns.group.tolist()],
            [columns.topics[i] for i in columns.topic.tolist()],
            columns.partition.tolist(),
            columns.committed_offset.tolist(),
            columns.leader_epoch.tolist(),
            columns.error_code.tolist(),
            strict=True,
        )
    )
    same = rows == mine and [d.group_id for d in theirs.groups] == columns.groups
    return {
        "round_trip_ms": _stats(times),
        "decode_ms": _stats(decode),
        "decode_rust_ms": _stats(ours, 2),
        "read_rust_ms": _stats(read, 2),
        "answer_bytes": len(raw),
        "rows": len(rows),
        "same_as_kafka_python": same,
    }


def _profiler(path: Path | None) -> Any:
    if path is None:
        return None
    import cProfile

    prof = cProfile.Profile()
    prof.enable()
    return prof


def _dump(prof: Any, target: Path) -> None:
    import io
    import pstats

    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(40)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text.getvalue())


def _profile(c: KafkaCollector, path: Path, ticks: int) -> dict[str, str]:
    """cProfile of ``ticks`` unchanged ticks of each kind (the first tick's is ``profile_first.txt``):
    the top of each, by cumulative time."""
    written = {}
    for kind, every in (("membership", 10**6), ("with_offsets", 0.01)):
        c.offsets_interval = every
        prof = _profiler(path)
        for _ in range(ticks):
            c.tick()
        _dump(prof, path / f"profile_{kind}.txt")
        written[kind] = str(path / f"profile_{kind}.txt")
    return written


def first_ticks(bootstrap: str, out: Path, pairs: int, say: Callable[[str], None]) -> dict[str, Any]:
    """The first tick (reading ``__consumer_offsets`` from its start, the checkpoint) of a fresh
    watcher, ``pairs`` times with kafka-python's own CRC-32C of record batches (pure Python: what
    ``main`` runs) and with ours (:func:`~mqbalance.fleet.kafka.group_log.use_native_crc32c`),
    alternating: wall time of the tick and of the group log's read."""
    import kafka.record.default_records as records
    import kafka.record.util as record_util

    import mqbalance.fleet.kafka.group_log as group_log

    native = group_log.use_native_crc32c
    got: dict[str, dict[str, list[float]]] = {}
    try:
        for k in range(pairs):
            for kind in ("kafka_python_crc32c", "native_crc32c"):
                if kind == "native_crc32c":
                    group_log.use_native_crc32c = native
                else:
                    group_log.use_native_crc32c = lambda: None
                    records.calc_crc32c = record_util.calc_crc32c
                c = KafkaCollector(
                    bootstrap, out / f"first-{kind}-{k}", interval=1, offsets_interval=10**6, timeout=30.0
                )
                try:
                    t = time.perf_counter()
                    c.tick()
                    wall = (time.perf_counter() - t) * 1000
                    row = got.setdefault(kind, {"wall_ms": [], "group_log_ms": [], "records": []})
                    row["wall_ms"].append(round(wall))
                    row["group_log_ms"].append(round(c.group_log.seconds * 1000))
                    row["records"].append(c.group_log.records)
                finally:
                    c.close()
                say(f"first tick with {kind}: {wall:.0f} ms ({c.group_log.seconds:.1f} s reading the group log)")
    finally:
        group_log.use_native_crc32c = native
    return got


def measure(
    bootstrap: str,
    fleet: Fleet,
    out: Path,
    *,
    ticks: int,
    rounds: int,
    say: Callable[[str], None],
    profile: Path | None = None,
    baseline: Any = None,
) -> dict[str, Any]:
    """The first tick (checked against the fleet), then ``rounds`` × (``ticks`` membership ticks,
    ``ticks`` ticks reading offsets too), every one unchanged. ``baseline``: another
    ``KafkaCollector`` class (e.g. ``main``'s, :func:`load_baseline`), its ticks taken right after
    ours in every round, on its own dataset, checked the same way."""
    result: dict[str, Any] = {"rounds": []}
    c = KafkaCollector(bootstrap, out, interval=1, offsets_interval=10**6, timeout=30.0)
    b = None
    if baseline is not None:
        b = baseline(bootstrap, out.parent / "baseline", interval=1, offsets_interval=10**6, timeout=30.0)
        b.tick()
        b.tick()
        result["baseline_correct"] = not check(b.state, fleet, offsets=True)
    try:
        load0 = os.getloadavg()
        prof = _profiler(profile)
        t = time.perf_counter()
        first = c.tick()
        first_ms = (time.perf_counter() - t) * 1000
        if prof is not None and profile is not None:
            _dump(prof, profile / "profile_first.txt")
        second = c.tick()  # the generations once the group log has been read to its end
        result["first_tick"] = {
            "wall_ms": round(first_ms),
            "events": first.events,
            "bytes_written": first.bytes_written,
            "load_avg_1m": round(load0[0], 1),
        }
        wrong = check(c.state, fleet, offsets=True)
        result["second_tick_events"] = second.events
        result["correct"] = not wrong
        result["differences"] = wrong[:20]
        result["seen"] = {
            "groups": sum(1 for g in c.state.groups if g in fleet.groups),
            "members": sum(1 for k in c.state.members if k[0] in fleet.groups),
            "partitions_owned": sum(1 for q, (o, _n) in c.state.ownership.items() if o and q[0] in fleet.groups),
        }
        say(f"first tick {first_ms:.0f} ms, {first.events:,} events; correct: {not wrong}")
        for k in range(rounds):
            load = os.getloadavg()[0]
            c.offsets_interval = 10**6
            membership = _ticks(c, ticks)
            c.offsets_interval = 0  # every tick reads offsets
            both = _ticks(c, ticks)
            rebuilt = _ticks(c, ticks, _forget_offsets)
            floor = offset_fetch_floor(bootstrap, sorted(fleet.groups), ticks)
            row = {
                "load_avg_1m": round(load, 1),
                "membership": membership,
                "with_offsets": both,
                "with_offsets_decoded": rebuilt,
                "floor": floor,
            }
            if b is not None:
                b.offsets_interval = 10**6
                row["baseline_membership"] = _ticks(b, ticks)
                b.offsets_interval = 0
                row["baseline_with_offsets"] = _ticks(b, ticks)
                say(
                    f"  baseline: membership {row['baseline_membership']['wall_ms']['median']} ms, with offsets "
                    f"{row['baseline_with_offsets']['wall_ms']['median']} ms; process CPU with offsets "
                    f"{row['baseline_with_offsets']['process_cpu_ms']['median']} ms against ours "
                    f"{both['process_cpu_ms']['median']} ms"
                )
            result["rounds"].append(row)
            say(
                f"round {k + 1}: membership tick {membership['wall_ms']['median']} ms "
                f"({membership['wall_ms']['min']}–{membership['wall_ms']['max']}), with offsets "
                f"{both['wall_ms']['median']} ms ({both['wall_ms']['min']}–{both['wall_ms']['max']}), "
                f"{membership['bytes_written']} / {both['bytes_written']} bytes; decoded again "
                f"{rebuilt['wall_ms']['median']} ms; OffsetFetch alone "
                f"{floor['round_trip_ms']['median']} ms + decoding {floor['decode_ms']['median']} ms (kafka-python), "
                f"{floor['decode_rust_ms']['median']} ms (ours; {floor['read_rust_ms']['median']} ms to the "
                f"watcher's dict); load {load:.1f}"
            )
        result["correct_after"] = not check(c.state, fleet, offsets=True)
        if profile is not None:
            result["profile"] = _profile(c, profile, ticks)
    finally:
        c.close()
        if b is not None:
            result["baseline_correct_after"] = not check(b.state, fleet, offsets=True)
            b.close()
    pairs = [("membership", "wall_ms"), ("with_offsets", "wall_ms"), ("floor", "round_trip_ms")]
    pairs += [("membership", "process_cpu_ms"), ("with_offsets", "process_cpu_ms")]
    pairs += [("with_offsets_decoded", "wall_ms"), ("with_offsets_decoded", "process_cpu_ms")]
    if b is not None:
        pairs += [(f"baseline_{k}", m) for k in ("membership", "with_offsets") for m in ("wall_ms", "process_cpu_ms")]
    pairs += [("floor", "decode_ms"), ("floor", "decode_rust_ms"), ("floor", "read_rust_ms")]
    if b is not None:
        for kind in ("with_offsets", "with_offsets_decoded"):
            for key in ("wall_ms", "process_cpu_ms"):
                ratios = [
                    r["baseline_with_offsets"][key]["median"] / max(r[kind][key]["median"], 1e-9)
                    for r in result["rounds"]
                ]
                result[f"{kind}_{key}_baseline_over_ours"] = {
                    "median": round(statistics.median(ratios), 2),
                    "min": round(min(ratios), 2),
                    "max": round(max(ratios), 2),
                }
    for kind, key in pairs:
        meds = [r[kind][key]["median"] for r in result["rounds"]]
        result[f"{kind}_{key}_median_of_rounds"] = {
            "median": statistics.median(meds),
            "min": min(meds),
            "max": max(meds),
        }
    return result


def load_baseline(path: Path) -> Any:
    """The ``KafkaCollector`` of another ``kafka_collector.py`` (e.g. ``git show
    main:python/mqbalance/history/kafka_collector.py > /tmp/main_collector.py``), loaded beside ours."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("baseline_kafka_collector", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.KafkaCollector


def run(args: argparse.Namespace, bootstrap: str, broker: Any, say: Callable[[str], None]) -> dict[str, Any]:
    result: dict[str, Any] = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}}
    result["load_avg_start"] = [round(x, 1) for x in os.getloadavg()]
    partitions, create_s = make_topics(broker, args.topics, args.partitions_per_topic)
    result["create_topics_s"] = round(create_s, 2)
    say(f"{args.topics} topics × {args.partitions_per_topic} partitions created in {create_s:.1f} s")
    ends, produce_s = produce(bootstrap, partitions, args.records)
    result["produce_s"] = round(produce_s, 1)
    say(f"{args.records} record(s) to each of {len(ends):,} partitions in {produce_s:.1f} s")
    fleet = Fleet(
        bootstrap,
        partitions,
        groups=args.groups,
        members=args.members,
        end_offsets=ends,
        session_timeout_s=args.session_timeout_s,
        parallel=args.parallel,
        say=lambda m: print(m, end="", file=sys.stderr, flush=True),
    )
    try:
        fleet.build()
        joins = [g.joins for g in fleet.groups.values()]
        result["fleet"] = {
            "groups": len(fleet.groups),
            "members": sum(len(g.members) for g in fleet.groups.values()),
            "build_s": round(fleet.seconds, 1),
            "requests": fleet.requests,
            "generations": sorted({g.generation for g in fleet.groups.values()}),
            "joins_per_member": round(sum(joins) / max(1, len(fleet.groups) * args.members), 2),
        }
        out = Path(tempfile.mkdtemp(prefix="mqbalance-watch-fleet-")) / "h"
        result["ticks"] = measure(
            bootstrap, fleet, out, ticks=args.ticks, rounds=args.rounds, say=say,
            profile=args.out if args.profile else None,
            baseline=load_baseline(args.baseline) if args.baseline else None,
        )  # fmt: skip
        if args.first_ticks:
            result["first_ticks"] = first_ticks(bootstrap, out.parent, args.first_ticks, say)
    finally:
        fleet.leave()
    result["load_avg_end"] = [round(x, 1) for x in os.getloadavg()]
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--bootstrap", help="a running broker (default: start the Java broker)")
    p.add_argument("--groups", type=int, default=100)
    p.add_argument("--members", type=int, default=10)
    p.add_argument("--topics", type=int, default=10)
    p.add_argument("--partitions-per-topic", type=int, default=100)
    p.add_argument("--records", type=int, default=3, help="records produced to every partition")
    p.add_argument("--ticks", type=int, default=10, help="unchanged ticks of each kind per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--parallel", type=int, default=10, help="groups forming at a time")
    p.add_argument("--session-timeout-s", type=float, default=3600.0)
    p.add_argument("--baseline", type=Path, help="another kafka_collector.py, its ticks taken beside ours")
    p.add_argument(
        "--first-ticks", type=int, default=0, help="then N pairs of first ticks: kafka-python's CRC-32C, ours"
    )
    p.add_argument("--profile", action="store_true", help="then cProfile the ticks into --out/profile_*.txt")
    p.add_argument("--out", type=Path, default=Path("benches/kafka_watch_fleet_results"))
    args = p.parse_args()

    def say(m: str) -> None:
        print(m, file=sys.stderr, flush=True)

    if args.bootstrap:
        from kafka import KafkaAdminClient

        class Remote:
            def __init__(self) -> None:
                self._admin = KafkaAdminClient(bootstrap_servers=args.bootstrap, request_timeout_ms=60_000)

            def admin(self) -> Any:
                return self._admin

        remote = Remote()
        try:
            result = run(args, args.bootstrap, remote, say)
        finally:
            remote.admin().close()
    else:
        from kafka_java_cluster import KafkaJavaBroker

        with KafkaJavaBroker(settings=BROKER_SETTINGS, quick_jit=False) as broker:
            result = {"broker_timings_s": {k: round(v, 1) for k, v in broker.timings.items()}}
            result.update(run(args, broker.bootstrap, broker, say))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0 if result["ticks"]["correct"] else 1


if __name__ == "__main__":
    sys.exit(main())
