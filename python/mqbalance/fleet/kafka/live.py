"""A live Kafka snapshot: read a Kafka cluster's topics, consumer groups and offsets through
kafka-python's admin client into the Kafka snapshot layout (:mod:`mqbalance.fleet.kafka.snapshot`).

What is read, and with which request:

* topics and partition counts (and topic ids) — Metadata;
* consumer groups — ListGroups, then DescribeGroups: state, protocol type, the assignor the group
  runs, and per member its ids, host, subscription, userData and current assignment, decoded from
  the member's metadata and assignment bytes (the consumer protocol's layouts). A group of the
  consumer protocol (KIP-848, ``group.protocol=consumer``) is not a classic group: Apache Kafka
  answers DescribeGroups for it with ``GROUP_ID_NOT_FOUND``, so such a group is described with
  ConsumerGroupDescribe (:mod:`.messages`): its state (``Assigning`` and ``Reconciling`` are its
  rebalancing states), the broker's assignor, and per member the subscribed topic names and the
  current assignment (no userData: that protocol has none);
* committed offsets — OffsetFetch, one per coordinator for all its groups (v8; one per group on an
  older broker, or when one group's error fails the whole request); log-end offsets — ListOffsets
  (latest); ``readAt`` — the middle of those reads (ms);
* lag seconds — the timestamp (and its type) of the record at each lagging partition's committed
  offset, fetched by a consumer without a group (:mod:`.lag_time`): ``lagTimes``, ages at ``readAt``.

A group read while it rebalances keeps its state (``PreparingRebalance``, ``CompletingRebalance``)
and whatever the broker returned. A request that fails is recorded in ``errors`` (with the group
where there is one) and the rest is still read; only a bootstrap where no broker answers is an
error (:class:`~mqbalance.exceptions.RemotingConnectError`, within ``timeout``), and so is a
refused SASL login or a failed TLS handshake (:mod:`mqbalance.kafka.client_errors`).

A secured cluster is read with ``client_config``: kafka-python's security settings, as
:func:`mqbalance.kafka.client_config.load_client_config` makes them from a Kafka client properties
file (``--command-config``), given to every client this reader creates.

Brokers that return members without their metadata (Tansu 0.6.0 answers DescribeGroups with empty
client ids, hosts, metadata and assignments) give members whose ``subscription`` and
``assignment`` are ``null``, and an ``errors`` line saying so per group.

>>> try:
...     read_kafka_cluster("127.0.0.1:1", timeout=0.5)
... except RemotingConnectError as e:
...     print(str(e).split(" within")[0])
no Kafka broker answered at 127.0.0.1:1
"""

from __future__ import annotations

import base64
import struct
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafka import KafkaAdminClient
from kafka.errors import KafkaError
from kafka.errors import for_code as kafka_error_for_code
from kafka.protocol.consumer import OffsetSpec
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.structs import TopicPartition

from mqbalance.exceptions import RemotingConnectError, RemotingError
from mqbalance.fleet.kafka.lag_time import plan_reads, read_record_times
from mqbalance.fleet.kafka.messages import ConsumerGroupDescribeRequest
from mqbalance.fleet.kafka.snapshot import KAFKA_KIND
from mqbalance.fleet.kafka.wire import read_committed_offsets
from mqbalance.kafka.client_errors import explained_failures
from mqbalance.kafka.member import check_bootstrap

__all__ = ["read_kafka_cluster"]


class _Admin(KafkaAdminClient):  # type: ignore[misc]
    """kafka-python's admin client, keeping DescribeGroups' member bytes for us to decode.

    kafka-python 3.0 decodes them itself and then fails on authorized-operation values it does
    not know (Tansu sends 15); we take the response's groups as they came."""

    def _describe_groups_process_response(self, response: Any) -> dict[str, Any]:
        return {group.group_id: group for group in response.groups}


def _decode_member(member: Any) -> dict[str, Any]:
    """One DescribeGroups member as the snapshot's member object."""
    out: dict[str, Any] = {
        "memberId": member.member_id,
        "clientId": member.client_id or "",
        "host": member.client_host or "",
        "groupInstanceId": getattr(member, "group_instance_id", None),
        "subscription": None,
        "assignment": None,
        "userData": None,
    }
    metadata, assignment = bytes(member.member_metadata or b""), bytes(member.member_assignment or b"")
    if metadata:
        try:
            sub = ConsumerProtocolSubscription.decode(metadata)
            out["subscription"] = sorted(sub.topics)
            out["userData"] = bytes(sub.user_data).hex() if sub.user_data else None
        except (struct.error, ValueError, TypeError):
            pass
    if assignment:
        try:
            got = ConsumerProtocolAssignment.decode(assignment)
            out["assignment"] = {t: sorted(ps) for t, ps in _assigned(got)}
        except (struct.error, ValueError, TypeError):
            pass
    elif metadata and out["subscription"] is not None:
        out["assignment"] = {}  # an empty assignment: a member with nothing
    return out


#: DescribeGroups' answer for a group that is not a classic group (a consumer-protocol group).
GROUP_ID_NOT_FOUND = 69


def _describe_consumer_groups(admin: Any, group_ids: list[str]) -> dict[str, Any]:
    """ConsumerGroupDescribe of ``group_ids``, sent to each group's coordinator: group id -> the
    response's described group."""

    async def describe() -> dict[str, Any]:
        coordinators = await admin._find_coordinator_ids(group_ids)
        by_node: dict[int, list[str]] = {}
        for g, node in coordinators.items():
            by_node.setdefault(node, []).append(g)
        out: dict[str, Any] = {}
        for node, ids in by_node.items():
            request = ConsumerGroupDescribeRequest(group_ids=ids, include_authorized_operations=False)
            response = await admin._manager.send(request, node_id=node)
            out.update({group.group_id: group for group in response.groups})
        return out

    found: dict[str, Any] = admin._manager.run(describe)
    return found


def _consumer_group(d: Any) -> dict[str, Any]:
    """One ConsumerGroupDescribe group as the snapshot's group object."""
    members = []
    for m in d.members:
        members.append(
            {
                "memberId": m.member_id,
                "clientId": m.client_id or "",
                "host": m.client_host or "",
                "groupInstanceId": m.instance_id,
                "subscription": sorted(m.subscribed_topic_names or ()),
                "assignment": {tp.topic_name: sorted(tp.partitions) for tp in m.assignment.topic_partitions},
                "userData": None,
            }
        )
    return {"state": d.group_state, "protocolType": "consumer", "protocol": d.assignor_name or "", "members": members}


def _assigned(assignment: Any) -> list[tuple[str, list[int]]]:
    pairs = []
    for item in assignment.assigned_partitions:
        topic = getattr(item, "topic", None)
        parts = getattr(item, "partitions", None)
        if topic is None:
            topic, parts = item
        pairs.append((topic, list(parts or ())))
    return pairs


def _topic_id(value: Any) -> str | None:
    """A topic id as Kafka's ``Uuid.toString()`` spells it (22 characters of unpadded base64url);
    ``None`` for none or the zero id."""
    if not value:
        return None
    try:
        u = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        return str(value)
    return None if u.int == 0 else base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode()


def read_kafka_cluster(
    bootstrap: str,
    *,
    timeout: float = 5.0,
    groups: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
    lag_time_budget: int = 1000,
    client_config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Kafka snapshot of the cluster at ``bootstrap`` (``HOST:PORT[,HOST:PORT…]``), as the JSON
    object :func:`~mqbalance.fleet.kafka.snapshot.kafka_snapshot_from_dict` validates.

    ``groups``: group ids to describe besides those ListGroups returns (a broker may not list a
    group it holds no offsets for yet — Tansu 0.6.0 does not — or ACLs may hide it).
    ``lag_time_budget``: lagging partitions whose oldest unconsumed record is read (:mod:`.lag_time`),
    most lagging first. ``client_config``: kafka-python's security settings (``security_protocol``,
    ``sasl_*``, ``ssl_*``) for every client."""
    say = progress or (lambda _msg: None)
    config = dict(client_config or {})
    check_bootstrap(bootstrap, timeout)
    errors: list[dict[str, str]] = []
    try:
        with explained_failures(bootstrap, config):
            admin = _Admin(
                bootstrap_servers=bootstrap.split(","),
                client_id="mqbalance-snapshot",
                request_timeout_ms=int(timeout * 1000),
                bootstrap_timeout_ms=int(timeout * 1000),
                **config,
            )
    except KafkaError as e:
        raise RemotingConnectError(
            f"no Kafka broker answered at {bootstrap} within {timeout:g} s ({e})", bootstrap
        ) from None
    try:
        data = _read(admin, say, errors, groups)
    finally:
        admin.close()
    _lag_times(data, bootstrap, timeout, lag_time_budget, say, config)
    return data


def _lag_times(
    data: dict[str, Any],
    bootstrap: str,
    timeout: float,
    budget: int,
    say: Callable[[str], None],
    config: Mapping[str, Any],
) -> None:
    """Lag seconds (:mod:`.lag_time`): ``lagTimes``, the timestamp of the record at each lagging
    partition's committed offset, measured against ``readAt`` (when the offsets were read, not these
    later record reads: time to drain divides offsets moved by time passed)."""
    committed = {(o["group"], o["topic"], o["partition"]): o["offset"] for o in data["offsets"]}
    ends = {(o["topic"], o["partition"]): o["offset"] for o in data["endOffsets"]}
    positions = plan_reads(committed, ends, budget=budget)
    try:
        with explained_failures(bootstrap, config):
            found = read_record_times(bootstrap, positions, timeout=max(timeout, 5.0), **config)
    except (KafkaError, RemotingError) as e:
        data["errors"].append({"request": "Fetch", "error": f"lag seconds: {type(e).__name__}: {e}"})
        found = {}
    data["lagTimes"] = [
        {"group": g, "topic": t, "partition": p, "offset": found[(t, p, c)][0], "timestamp": found[(t, p, c)][1],
         "timestampType": found[(t, p, c)][2]}
        for (g, t, p), c in sorted(committed.items())
        if (t, p, c) in found
    ]  # fmt: skip
    lagging = sum(1 for (_g, t, p), c in committed.items() if ends.get((t, p), c) > c)
    say(f"lag seconds: {len(data['lagTimes']):,} of {lagging:,} lagging partitions read")


def _read(admin: Any, say: Callable[[str], None], errors: list[dict[str, str]], extra: Sequence[str]) -> dict[str, Any]:
    topics: dict[str, dict[str, Any]] = {}
    names = sorted(t for t in admin.list_topics() if not t.startswith("__"))
    if names:
        for t in admin.describe_topics(names):
            if t.get("error_code"):
                errors.append(
                    {"request": "Metadata", "topic": t["name"], "error": kafka_error_for_code(t["error_code"]).__name__}
                )
                continue
            spec: dict[str, Any] = {"partitions": len(t["partitions"])}
            topic_id = _topic_id(t.get("topic_id"))
            if topic_id:
                spec["topicId"] = topic_id
            topics[t["name"]] = spec
    say(f"{len(topics):,} topics, {sum(s['partitions'] for s in topics.values()):,} partitions")
    listed = admin.list_groups()
    group_ids = sorted(
        {g["group_id"] for g in listed if g.get("protocol_type", "consumer") in ("consumer", "")} | set(extra)
    )
    groups: dict[str, Any] = {}
    if group_ids:
        try:
            described = admin.describe_groups(group_ids)
        except KafkaError as e:
            errors.append({"request": "DescribeGroups", "error": f"{type(e).__name__}: {e}"})
            described = {}
        not_classic = [g for g in group_ids if g in described and described[g].error_code == GROUP_ID_NOT_FOUND]
        modern: dict[str, Any] = {}
        if not_classic:
            try:
                modern = _describe_consumer_groups(admin, not_classic)
            except KafkaError as e:
                errors.append({"request": "ConsumerGroupDescribe", "error": f"{type(e).__name__}: {e}"})
        for g in group_ids:
            d = described.get(g)
            if d is None:
                continue
            m = modern.get(g)
            if m is not None and not m.error_code:
                groups[g] = _consumer_group(m)
                continue
            if d.error_code:
                errors.append(
                    {"request": "DescribeGroups", "group": g, "error": kafka_error_for_code(d.error_code).__name__}
                )
                continue
            members = [_decode_member(m) for m in d.members]
            if members and all(m["subscription"] is None for m in members):
                errors.append(
                    {
                        "request": "DescribeGroups",
                        "group": g,
                        "error": "the broker returned the members without their metadata or assignment",
                    }
                )
            groups[g] = {
                "state": d.group_state,
                "protocolType": d.protocol_type,
                "protocol": d.protocol_data or "",
                "members": members,
            }
    say(f"{len(groups):,} consumer groups, {sum(len(g['members']) for g in groups.values()):,} members")
    started = time.time()
    offsets = _committed(admin, group_ids, errors)
    ends: list[dict[str, Any]] = []
    tps = [TopicPartition(t, p) for t, spec in sorted(topics.items()) for p in range(spec["partitions"])]
    if tps:
        try:
            latest = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
            for tp, ot in sorted(latest.items()):
                ends.append({"topic": tp.topic, "partition": tp.partition, "offset": ot.offset})
        except KafkaError as e:
            errors.append({"request": "ListOffsets", "error": f"{type(e).__name__}: {e}"})
    read_at = int((started + time.time()) * 500)  # the middle of the offsets' reads, in ms
    say(f"{len(offsets):,} committed offsets, {len(ends):,} log-end offsets")
    return {
        "kind": KAFKA_KIND,
        "topics": topics,
        "groups": groups,
        "offsets": offsets,
        "endOffsets": ends,
        "errors": errors,
        "readAt": read_at,
    }


def _committed(admin: Any, group_ids: list[str], errors: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The committed offsets of ``group_ids`` as snapshot rows (by group, topic, partition): one
    OffsetFetch per coordinator for all its groups (:func:`.wire.read_committed_offsets`); when that
    fails (one group's error fails it all), one per group, each failure recorded with its group."""
    if group_ids:
        try:
            got = read_committed_offsets(admin, group_ids)
        except KafkaError:
            pass
        else:
            return [{"group": g, "topic": t, "partition": p, "offset": o} for (g, t, _b, p), o in sorted(got.items())]
    offsets: list[dict[str, Any]] = []
    for g in group_ids:
        try:
            one = admin.list_group_offsets({g: None})
        except KafkaError as e:
            errors.append({"request": "OffsetFetch", "group": g, "error": f"{type(e).__name__}: {e}"})
            continue
        for tp, om in sorted(one.get(g, {}).items()):
            if om.offset is not None and om.offset >= 0:
                offsets.append({"group": g, "topic": tp.topic, "partition": tp.partition, "offset": om.offset})
    return offsets
