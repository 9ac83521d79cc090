"""The Kafka watcher behind ``mqbalance watch --bootstrap``: every tick, the consumer groups of
both protocols as the brokers report them, compared with the previous tick, and only the changes
written to the history dataset (:mod:`mqbalance.history.schema`, ``cluster_kind`` ``kafka``). The
tick loop, checkpoints, gaps, retention, metrics and the restart from the dataset are
:class:`~mqbalance.history.ticking.TickLoop`'s, shared with the RocketMQ watcher.

What a tick reads (kafka-python's admin client, one connection kept open):

* ListGroups (one per broker; ``classic`` and ``consumer`` groups, share and streams groups left
  out); DescribeGroups for the classic groups (one per coordinator): state, protocol type and
  protocol, members with member id, client id, host, instance id, decoded subscription and
  assignment — which the broker reports only for a ``Stable`` group (between PreparingRebalance
  and Stable a classic group's partitions are owned by nobody as the broker reports them, and its
  subscriptions are the last ones known); ConsumerGroupDescribe for consumer-protocol groups
  (:mod:`mqbalance.fleet.kafka.messages`): group epoch, assignment epoch, assignor, and per member
  its epoch, instance id, rack, assignment and target assignment;
* Metadata for the partition counts of the subscribed topics (a partition of a subscribed topic
  that nobody holds is owned by nobody);
* the classic groups' generations, which DescribeGroups does not carry: the coordinator's own
  records in ``__consumer_offsets`` (:class:`~mqbalance.fleet.kafka.group_log.GroupLog`: a
  ListOffsets per tick, a Fetch only when something was appended);
* at ``offsets_interval``: committed offsets (OffsetFetch, one per coordinator for every group) and
  log-end offsets (ListOffsets per leader), and lag seconds for at most ``lag_time_budget``
  lagging partitions (:mod:`mqbalance.fleet.kafka.lag_time`): the timestamp of the record at the
  committed offset; a partition whose committed offset did not move keeps its exact reading, one
  not read again within the budget carries its earlier reading (``carried``: an upper bound).

A request that fails is a ``gaps`` row and what it would have told is carried from the previous
tick (a failed ListGroups carries every group; a failed DescribeGroups its groups; a group's own
error code that group): a tick never reports "everyone left" because the cluster could not be read.

``client_config``: kafka-python settings (security protocol, SASL, TLS) given to every client the
watcher creates (:func:`client_settings` builds them, the one place to extend).

>>> old = KafkaState()
>>> new = KafkaState(members={("g", "m-1"): MemberView("c1", "/10.0.0.1", None, 3, None)})
>>> [(e["event"], e["member_id"], e["member_epoch"]) for e in kafka_diff(old, new, offsets=False)["members"]]
[('join', 'm-1', 3)]
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from kafka.errors import KafkaError
from kafka.errors import for_code as error_for_code
from kafka.protocol.consumer import OffsetSpec
from kafka.structs import TopicPartition

from mqbalance.exceptions import InvalidInputError
from mqbalance.fleet.kafka.group_log import GroupLog, GroupRecord
from mqbalance.fleet.kafka.lag_time import plan_reads, read_record_times
from mqbalance.fleet.kafka.live import _Admin, _decode_member, _describe_consumer_groups
from mqbalance.fleet.kafka.wire import read_committed_offsets
from mqbalance.history.metrics import WatchMetrics
from mqbalance.history.ticking import Observation, TickLoop, replay, seconds
from mqbalance.kafka.client_errors import explained_failures
from mqbalance.kafka.member import check_bootstrap

__all__ = [
    "GroupView",
    "KafkaCollector",
    "KafkaState",
    "MemberView",
    "client_settings",
    "confirmed_gone",
    "described_generation",
    "kafka_diff",
    "load_kafka_state",
]

Queue = tuple[str, str, str, int]  # group, topic, "" (a Kafka partition has no broker name), partition

#: the group types watched (ListGroups' ``GroupType``); share and streams groups are other things
GROUP_TYPES = ("classic", "consumer")
#: DescribeGroups' answer for a group that is not a classic group (a consumer-protocol group)
GROUP_ID_NOT_FOUND = 69


class GroupView(NamedTuple):
    """A group as a tick saw it."""

    group_type: str | None
    state: str | None
    protocol_type: str | None
    strategy: str | None
    subscriptions: tuple[str, ...]
    generation: int | None
    assignment_epoch: int | None


class MemberView(NamedTuple):
    """A member (keyed by group and member id) as a tick saw it."""

    client_id: str
    host: str
    instance_id: str | None
    member_epoch: int | None
    rack: str | None


@dataclass
class KafkaState:
    """What one tick saw: groups, members, partition owners (member ids, how many hold it) and
    target owners, committed and log-end offsets, lag seconds (store ms, how known) and the
    timestamp type of that reading."""

    groups: dict[str, GroupView] = field(default_factory=dict)
    members: dict[tuple[str, str], MemberView] = field(default_factory=dict)
    ownership: dict[Queue, tuple[str | None, int]] = field(default_factory=dict)
    targets: dict[Queue, str | None] = field(default_factory=dict)
    offsets: dict[Queue, tuple[int | None, int | None]] = field(default_factory=dict)
    oldest: dict[Queue, tuple[int | None, str]] = field(default_factory=dict)
    ts_types: dict[Queue, str] = field(default_factory=dict)


def client_settings(client_config: Mapping[str, Any], *, client_id: str, timeout: float) -> dict[str, Any]:
    """The keyword arguments of every kafka-python client the watcher creates: ``client_config``
    (security settings) over the watcher's own.

    >>> client_settings({"security_protocol": "SSL"}, client_id="x", timeout=2)["security_protocol"]
    'SSL'
    """
    return {"client_id": client_id, "request_timeout_ms": max(1000, int(timeout * 1000)), **client_config}


# --- events ----------------------------------------------------------------------------------------


def _group_row(event: str, g: str, v: GroupView) -> dict[str, Any]:
    return {
        "event": event,
        "group": g,
        "message_model": None,
        "subscriptions": list(v.subscriptions),
        "strategy": v.strategy,
        "group_type": v.group_type,
        "state": v.state,
        "protocol_type": v.protocol_type,
        "generation": v.generation,
        "assignment_epoch": v.assignment_epoch,
    }


def _member_row(event: str, key: tuple[str, str], v: MemberView) -> dict[str, Any]:
    return {
        "event": event,
        "group": key[0],
        "client_id": v.client_id,
        "client_addr": v.host,
        "member_id": key[1],
        "instance_id": v.instance_id,
        "member_epoch": v.member_epoch,
        "rack": v.rack,
    }


def _queue_row(q: Queue) -> dict[str, Any]:
    return {"group": q[0], "topic": q[1], "broker_name": q[2], "queue_id": q[3]}


def _owner_row(event: str, q: Queue, state: KafkaState) -> dict[str, Any]:
    owner, n = state.ownership.get(q, (None, 0))
    return {**_queue_row(q), "event": event, "owner": owner, "processes": n, "target_owner": state.targets.get(q)}


def _offset_row(event: str, q: Queue, state: KafkaState) -> dict[str, Any]:
    committed, end = state.offsets[q]
    store, how = state.oldest.get(q, (None, None))
    return {
        **_queue_row(q),
        "event": event,
        "committed": committed,
        "max_offset": end,
        "oldest_store_ms": store,
        "lag_time": how,
        "timestamp_type": state.ts_types.get(q) if how is not None else None,
    }


_SUBSCRIPTION = ("group_type", "protocol_type", "strategy", "subscriptions")
_STATE = ("state", "generation", "assignment_epoch")


def kafka_diff(
    old: KafkaState, new: KafkaState, *, offsets: bool, groups: set[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The events that turn ``old`` into ``new`` (offsets only when ``offsets``): groups
    ``appear``/``disappear``, ``subscription`` (type, protocol type, assignor or topics changed)
    and ``state`` (state, generation or assignment epoch changed), each row with every current
    value; members ``join``/``leave``/``epoch`` (an attribute of the same member id changed);
    owners ``change``/``remove``; offsets ``change``. ``groups``: only these groups' members and
    owners may have changed (the others are not compared)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for g, v in sorted(new.groups.items()):
        before = old.groups.get(g)
        if before is None:
            out["groups"].append(_group_row("appear", g, v))
            continue
        if any(getattr(before, f) != getattr(v, f) for f in _SUBSCRIPTION):
            out["groups"].append(_group_row("subscription", g, v))
        if any(getattr(before, f) != getattr(v, f) for f in _STATE):
            out["groups"].append(_group_row("state", g, v))
    for g in sorted(old.groups.keys() - new.groups.keys()):
        out["groups"].append(_group_row("disappear", g, old.groups[g]))

    def mine(keys: Any) -> Any:
        return keys if groups is None else [k for k in keys if k[0] in groups]

    for key, m in sorted((k, new.members[k]) for k in mine(new.members)):
        was = old.members.get(key)
        if was is None:
            out["members"].append(_member_row("join", key, m))
        elif was != m:
            out["members"].append(_member_row("epoch", key, m))
    for key in sorted(set(mine(old.members)) - new.members.keys()):
        out["members"].append(_member_row("leave", key, old.members[key]))
    for q in sorted(set(mine(new.ownership)) | set(mine(old.ownership))):
        if q not in new.ownership:
            out["ownership"].append({**_owner_row("remove", q, old), "owner": None, "processes": 0})
        elif old.ownership.get(q) != new.ownership[q] or old.targets.get(q) != new.targets.get(q):
            out["ownership"].append(_owner_row("change", q, new))
    if offsets and (
        (new.offsets is not old.offsets and new.offsets != old.offsets)
        or new.oldest != old.oldest
        or new.ts_types != old.ts_types
    ):
        moved = [
            q
            for q, v in new.offsets.items()
            if old.offsets.get(q) != v
            or old.oldest.get(q) != new.oldest.get(q)
            or old.ts_types.get(q) != new.ts_types.get(q)
        ]
        for q in sorted(moved):
            out["offsets"].append(_offset_row("change", q, new))
    return dict(out)


def kafka_checkpoint(state: KafkaState) -> dict[str, list[dict[str, Any]]]:
    """The whole state as ``checkpoint`` events."""
    return {
        "groups": [_group_row("checkpoint", g, v) for g, v in sorted(state.groups.items())],
        "members": [_member_row("checkpoint", k, v) for k, v in sorted(state.members.items())],
        "ownership": [_owner_row("checkpoint", q, state) for q in sorted(state.ownership)],
        "offsets": [_offset_row("checkpoint", q, state) for q in sorted(state.offsets)],
    }


def _apply(state: KafkaState, name: str, r: Mapping[str, Any]) -> None:
    if name == "groups":
        if r["event"] == "disappear":
            state.groups.pop(r["group"], None)
        else:
            state.groups[r["group"]] = GroupView(
                r["group_type"],
                r["state"],
                r["protocol_type"],
                r["strategy"],
                tuple(r["subscriptions"] or ()),
                r["generation"],
                r["assignment_epoch"],
            )
    elif name == "members":
        key = (r["group"], r["member_id"] or r["client_id"])
        if r["event"] == "leave":
            state.members.pop(key, None)
        else:
            state.members[key] = MemberView(
                r["client_id"], r["client_addr"], r["instance_id"], r["member_epoch"], r["rack"]
            )
    else:
        q = (r["group"], r["topic"], r["broker_name"], r["queue_id"])
        if name == "ownership":
            if r["event"] == "remove":
                state.ownership.pop(q, None)
                state.targets.pop(q, None)
            else:
                state.ownership[q] = (r["owner"], r["processes"])
                state.targets[q] = r["target_owner"]
        else:
            state.offsets[q] = (r["committed"], r["max_offset"])
            if r.get("lag_time") is not None:
                state.oldest[q] = (r.get("oldest_store_ms"), r["lag_time"])
                if r.get("timestamp_type"):
                    state.ts_types[q] = r["timestamp_type"]
            else:
                state.oldest.pop(q, None)
                state.ts_types.pop(q, None)


def load_kafka_state(root: str | Path) -> KafkaState:
    """The state at the last committed tick of a Kafka history (its last checkpoint, then the changes)."""
    state: KafkaState = replay(root, KafkaState(), _apply)
    return state


# --- reading -----------------------------------------------------------------------------------------


def described_generation(state: str | None, earlier: GroupRecord | None, latest: GroupRecord | None) -> int | None:
    """The generation of a classic group described in ``state``, from the coordinator's records of
    it read before the description (``earlier``, at the last tick) and after it (``latest``);
    ``None`` when there is none. The coordinator writes a generation's record when the leader's
    assignment is stored, and only then makes the group ``Stable``: read after the description,
    the record of a group described settled is its generation (or a newer one). A group described
    in ``PreparingRebalance`` still has the generation before, and a record read after the
    description may be the new one this rebalance made meanwhile: the earlier record is its
    generation (the history counts the rebalance when the group is settled again).

    >>> r3, r4 = (GroupRecord("consumer", n, "range", "m1", None) for n in (3, 4))
    >>> described_generation("Stable", r3, r4), described_generation("PreparingRebalance", r3, r4)
    (4, 3)
    """
    record = earlier if str(state or "").lower() == "preparingrebalance" else latest
    return None if record is None else record.generation


def confirmed_gone(answers: Mapping[str, tuple[int, str | None]]) -> set[str]:
    """The groups whose coordinator's answer (error code, state) to a describe says they no longer
    exist: a classic group ``Dead``, or a group it does not know (``GROUP_ID_NOT_FOUND``). Any other
    error (``NOT_COORDINATOR``, ``COORDINATOR_LOAD_IN_PROGRESS``, ...) or a live state is no proof.

    >>> sorted(confirmed_gone({"a": (0, "Dead"), "b": (69, None), "c": (16, None), "d": (0, "Stable")}))
    ['a', 'b']
    """
    return {
        g
        for g, (code, state) in answers.items()
        if code == GROUP_ID_NOT_FOUND or (code == 0 and (state or "").lower() == "dead")
    }


def _gap(request: str, error: BaseException | str, *, address: str = "", node: str = "") -> dict[str, Any]:
    text = str(error)
    if not isinstance(error, str) and not text.startswith(type(error).__name__):
        text = f"{type(error).__name__}: {text}"
    return {"broker_name": node, "address": address, "request": request, "error": " ".join(str(text).split())[:500]}


class _Counted:
    """Counts the requests a kafka-python client's connection manager sends."""

    def __init__(self) -> None:
        self.sent = 0

    def wrap(self, client: Any) -> None:
        manager = getattr(client, "_manager", None)
        if manager is None or getattr(manager, "_mqbalance_counted", False):
            return
        send = manager.send

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.sent += 1
            return send(*args, **kwargs)

        manager.send = counted
        manager._mqbalance_counted = True


class KafkaCollector(TickLoop):
    """Watches the Kafka cluster at ``bootstrap`` (``HOST:PORT[,…]``) into the history at ``out``
    (see the module docs)."""

    def __init__(
        self,
        bootstrap: str,
        out: str | Path,
        *,
        interval: float = 10.0,
        offsets_interval: float = 60.0,
        checkpoint_every: float = 3600.0,
        retain: float | None = 7 * 86400.0,
        timeout: float = 3.0,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        say: Callable[[str], None] = lambda _m: None,
        metrics: WatchMetrics | None = None,
        lag_time_budget: int = 256,
        client_config: Mapping[str, Any] | None = None,
    ) -> None:

        if not isinstance(bootstrap, str) or not bootstrap.strip():
            raise InvalidInputError(f"bootstrap must be HOST:PORT[,HOST:PORT…], got {bootstrap!r}", bootstrap)
        self.bootstrap = bootstrap
        self.timeout = seconds(timeout, "timeout")
        if isinstance(lag_time_budget, bool) or not isinstance(lag_time_budget, int) or lag_time_budget < 0:
            raise InvalidInputError(
                f"lag time budget must be an integer >= 0, got {lag_time_budget!r}", lag_time_budget
            )
        check_bootstrap(bootstrap, self.timeout)  # syntax and a listening broker, in one line
        super().__init__(
            out,
            kind="kafka",
            interval=interval,
            offsets_interval=offsets_interval,
            checkpoint_every=checkpoint_every,
            retain=retain,
            wall=wall,
            monotonic=monotonic,
            say=say,
            metrics=metrics,
        )
        self.client_config = dict(client_config or {})
        self.lag_time_budget = lag_time_budget
        self.state: KafkaState = load_kafka_state(self.writer.root)
        self.counter = _Counted()
        self.admin: Any = None
        self.group_log = GroupLog(bootstrap, timeout=self.timeout, config=self.client_config)
        self.partition_counts: dict[str, int] = {}
        #: per group: what its members and owners were last built from, and their keys in the state
        self.sources: dict[str, Any] = {}
        #: the last OffsetFetch answers per coordinator, what the last offsets were built from
        #: (committed, log ends, partitions held without a commit, the offsets), the partitions of
        #: those committed offsets
        self._offset_answers: dict[int, tuple[bytes, dict[Queue, int]]] = {}
        self._offsets_basis: tuple[Any, ...] = (None, None, None, None)
        self._committed_pairs: set[tuple[str, int]] = set()
        self.members_of: dict[str, list[tuple[str, str]]] = {}
        self.queues_of: dict[str, list[Queue]] = {}
        for k in self.state.members:  # a restart: rebuilt from the dataset
            self.members_of.setdefault(k[0], []).append(k)
        for q in self.state.ownership:
            self.queues_of.setdefault(q[0], []).append(q)
        self._check_access()

    # --- clients ---------------------------------------------------------------------------------

    def _check_access(self) -> None:
        """Connect once before the first tick: a refused login, a failed TLS handshake or a listener
        of another security protocol is a configuration to fix, raised as its precise error
        (:mod:`mqbalance.kafka.client_errors`); any other failure is left to the ticks (gaps)."""
        try:
            with explained_failures(self.bootstrap, self.client_config):
                self._admin()
        except KafkaError:
            self._drop_admin()

    def _admin(self) -> Any:
        if self.admin is None:
            self.admin = _Admin(
                bootstrap_servers=self.bootstrap.split(","),
                **client_settings(self.client_config, client_id="mqbalance-watch", timeout=self.timeout),
            )
            self.counter.wrap(self.admin)
        return self.admin

    def _drop_admin(self) -> None:
        """After a connection failure: a new client at the next tick (kafka-python's may stay stuck)."""
        if self.admin is not None:
            with contextlib.suppress(Exception):  # closing a broken client: nothing more to learn
                self.admin.close()
            self.admin = None

    # --- a tick ----------------------------------------------------------------------------------

    def observe(self, due_offsets: bool) -> Observation:
        """Read the cluster once (see the module docs). A group whose description (raw member
        bytes, state, epochs) and topics' partition counts are those of the last tick keeps its
        members and owners without being decoded again: an unchanged tick costs the requests and
        a comparison per group, and only the changed groups are compared event by event."""
        sent = self.counter.sent
        gaps: list[dict[str, Any]] = []
        old = self.state
        # offsets carried as they were (the same dict: a state's dicts are not changed once built)
        new = KafkaState(offsets=old.offsets, oldest=dict(old.oldest), ts_types=dict(old.ts_types))
        listed: dict[str, str] | None = None
        try:
            admin = self._admin()
            groups = admin.list_groups()  # raises before anything is taken as listed
            listed = {}
            for g in groups:
                kind = str(g.get("group_type") or "classic").lower()
                if kind in GROUP_TYPES:
                    listed[g["group_id"]] = kind
        except KafkaError as e:
            gaps.append(_gap("ListGroups", e, address=self.bootstrap))
            self._drop_admin()
        if listed is None:  # nothing read: everything as it was
            new.groups, new.members, new.ownership, new.targets = old.groups, old.members, old.ownership, old.targets
            return Observation(new, gaps, False, self.counter.sent - sent, hint=set())
        self._partition_counts(admin, sorted({t for v in old.groups.values() for t in v.subscriptions}), gaps)
        kept: set[str] = set()  # carried (not read) or unchanged: as they were
        unlisted = sorted(g for g in old.groups if g not in listed)
        if unlisted:
            kept.update(self._not_confirmed_gone(admin, unlisted, gaps))
        earlier = dict(self.group_log.groups)  # the records as of the last tick (see _generations)
        described = self._describe(admin, listed, new, gaps, kept)
        for g in kept:
            if g in old.groups:
                new.groups.setdefault(g, old.groups[g])
            for k in self.members_of.get(g, ()):
                new.members[k] = old.members[k]
            for q in self.queues_of.get(g, ()):
                new.ownership[q] = old.ownership[q]
                if q in old.targets:
                    new.targets[q] = old.targets[q]
        self._read_group_log(gaps)
        self._generations(new, earlier)
        missing = sorted({t for g in described for t in new.groups[g].subscriptions} - self.partition_counts.keys())
        self._partition_counts(admin, missing, gaps)
        self._owners(described, new)
        changed = (set(described) | old.groups.keys() | new.groups.keys()) - kept
        for g in changed:
            self.members_of.pop(g, None)
            self.queues_of.pop(g, None)
        for k in new.members:
            if k[0] in changed:
                self.members_of.setdefault(k[0], []).append(k)
        for q in new.ownership:
            if q[0] in changed:
                self.queues_of.setdefault(q[0], []).append(q)
        for g in set(self.sources) - new.groups.keys():
            del self.sources[g]
        offsets_read = False
        if due_offsets and self.admin is not None:
            offsets_read = self._offsets(self.admin, new, gaps)
            if offsets_read:
                self._lag_time(new, gaps)
        # the group log's consumer, once opened, is counted too
        if self.group_log.client is not None:
            self.counter.wrap(self.group_log.client)
        return Observation(new, gaps, offsets_read, self.counter.sent - sent, hint=changed)

    def _not_confirmed_gone(self, admin: Any, unlisted: list[str], gaps: list[dict[str, Any]]) -> set[str]:
        """Of the groups the last tick had and ListGroups no longer lists, those whose coordinator
        does not confirm they are gone (:func:`confirmed_gone`): they are carried as they were, with
        a gap. A coordinator that is unloading its groups — a broker stopping, a partition of
        ``__consumer_offsets`` changing leader — lists none of them while it answers the request."""
        kinds = {g: self.state.groups[g].group_type for g in unlisted}
        classic = [g for g in unlisted if kinds[g] == "classic"]
        modern = [g for g in unlisted if kinds[g] != "classic"]
        try:
            answers = (
                {g: (d.error_code, d.group_state) for g, d in admin.describe_groups(classic).items()} if classic else {}
            )
            if modern:
                found = _describe_consumer_groups(admin, modern)
                answers.update({g: (d.error_code, d.group_state) for g, d in found.items()})
        except KafkaError as e:
            gaps.append(_gap("DescribeGroups (unlisted groups)", e, address=self.bootstrap))
            return set(unlisted)
        gone = confirmed_gone(answers)
        for g in unlisted:
            if g not in gone:
                code, state = answers.get(g, (None, None))
                why = error_for_code(code).__name__ if code else f"state {state}" if state else "no answer"
                gaps.append(
                    _gap(
                        "ListGroups",
                        f"{g}: not listed, and its coordinator did not confirm it is gone ({why})",
                        address=self.bootstrap,
                    )
                )
        return set(unlisted) - gone

    def _partition_counts(self, admin: Any, topics: list[str], gaps: list[dict[str, Any]]) -> None:
        """One Metadata request for ``topics``' partition counts (a count may grow)."""
        if not topics:
            return
        try:
            for t in admin.describe_topics(topics):
                self.partition_counts[t["name"]] = 0 if t.get("error_code") else len(t["partitions"])
        except KafkaError as e:
            gaps.append(_gap("Metadata", e, address=self.bootstrap))

    def _counts(self, topics: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(self.partition_counts.get(t, -1) for t in topics)

    def _describe(
        self, admin: Any, listed: Mapping[str, str], new: KafkaState, gaps: list[dict[str, Any]], kept: set[str]
    ) -> dict[str, dict[str, Any]]:
        """DescribeGroups and ConsumerGroupDescribe into ``new.groups`` and ``new.members``; per
        changed group, its members' assignments and the consumer protocol's targets. Groups that
        could not be read or did not change go into ``kept``."""
        old = self.state
        classic = sorted(g for g, kind in listed.items() if kind == "classic")
        modern = sorted(g for g, kind in listed.items() if kind == "consumer")
        out: dict[str, dict[str, Any]] = {}
        raw: dict[str, Any] = {}
        if classic:
            try:
                raw = admin.describe_groups(classic)
            except KafkaError as e:
                gaps.append(_gap("DescribeGroups", e, address=self.bootstrap))
                kept.update(classic)
        for g in classic:
            d = raw.get(g)
            if d is None:
                continue
            if d.error_code == GROUP_ID_NOT_FOUND:  # turned into a consumer-protocol group meanwhile
                modern.append(g)
                continue
            if d.error_code:
                gaps.append(
                    _gap("DescribeGroups", f"{g}: {error_for_code(d.error_code).__name__}", address=self.bootstrap)
                )
                kept.add(g)
                continue
            before = old.groups.get(g)
            source: Any = (
                "classic",
                d.group_state,
                d.protocol_type,
                d.protocol_data,
                tuple(
                    (m.member_id, m.client_id, m.client_host, getattr(m, "group_instance_id", None),
                     bytes(m.member_metadata or b""), bytes(m.member_assignment or b""))
                    for m in d.members
                ),
                self._counts(before.subscriptions) if before is not None else None,
            )  # fmt: skip
            if before is not None and self.sources.get(g) == source:
                kept.add(g)
                continue
            self.sources[g] = source
            members = [_decode_member(m) for m in d.members]
            subs = sorted({t for m in members for t in (m["subscription"] or ())})
            assigned = {t for m in members for t in (m["assignment"] or {})}
            if not subs and members and before is not None:  # not Stable: the broker sends no metadata
                subs = list(before.subscriptions)
            strategy = d.protocol_data or (before.strategy if before is not None and members else None)
            new.groups[g] = GroupView(
                "classic",
                d.group_state,
                d.protocol_type,
                strategy or None,
                tuple(sorted(set(subs) | assigned)),
                before.generation if before is not None else None,
                None,
            )
            for m in members:
                new.members[(g, m["memberId"])] = MemberView(
                    m["clientId"], m["host"], m["groupInstanceId"] or None, None, None
                )
            out[g] = {"assignment": {m["memberId"]: m["assignment"] or {} for m in members}, "target": None}
        if modern:
            try:
                found = _describe_consumer_groups(admin, sorted(modern))
            except KafkaError as e:
                gaps.append(_gap("ConsumerGroupDescribe", e, address=self.bootstrap))
                kept.update(modern)
                found = {}
            for g in sorted(modern):
                d = found.get(g)
                if d is None:
                    continue
                if d.error_code:
                    gaps.append(
                        _gap(
                            "ConsumerGroupDescribe",
                            f"{g}: {error_for_code(d.error_code).__name__}",
                            address=self.bootstrap,
                        )
                    )
                    kept.add(g)
                    continue
                before = old.groups.get(g)
                assignment: dict[str, dict[str, list[int]]] = {}
                target: dict[str, dict[str, list[int]]] = {}
                subs_set: set[str] = set()
                views = {}
                for m in d.members:
                    views[(g, m.member_id)] = MemberView(
                        m.client_id or "", m.client_host or "", m.instance_id or None, m.member_epoch, m.rack_id or None
                    )
                    assignment[m.member_id] = {
                        tp.topic_name: list(tp.partitions) for tp in m.assignment.topic_partitions
                    }
                    target[m.member_id] = {
                        tp.topic_name: list(tp.partitions) for tp in m.target_assignment.topic_partitions
                    }
                    subs_set.update(m.subscribed_topic_names or ())
                    subs_set.update(assignment[m.member_id])
                view = GroupView(
                    "consumer",
                    d.group_state,
                    "consumer",
                    d.assignor_name or None,
                    tuple(sorted(subs_set)),
                    d.group_epoch,
                    d.assignment_epoch,
                )
                source = (view, views, assignment, target, self._counts(view.subscriptions))
                if before is not None and self.sources.get(g) == source:
                    kept.add(g)
                    continue
                self.sources[g] = source
                new.groups[g] = view
                new.members.update(views)
                out[g] = {"assignment": assignment, "target": target}
        return out

    def _read_group_log(self, gaps: list[dict[str, Any]]) -> None:
        """Read what the coordinator appended to its log since the last tick (:class:`GroupLog`)."""
        try:
            self.group_log.update()
        except (KafkaError, InvalidInputError) as e:
            gaps.append(_gap("Fetch __consumer_offsets", e, address=self.bootstrap))

    def _generations(self, new: KafkaState, earlier: Mapping[str, GroupRecord]) -> None:
        """Classic groups' generations from the coordinator's records (:func:`described_generation`:
        ``earlier`` the records as of the last tick, the latest read after the descriptions), once
        the log was read to the end (until then, the generations as they were)."""
        if not self.group_log.caught_up:  # an older record may still be followed by a newer one
            return
        for g, v in list(new.groups.items()):
            if v.group_type != "classic":
                continue
            generation = described_generation(v.state, earlier.get(g), self.group_log.groups.get(g))
            if generation is not None and generation != v.generation:
                new.groups[g] = v._replace(generation=generation)

    def _owners(self, described: Mapping[str, Mapping[str, Any]], new: KafkaState) -> None:
        """Every partition of the described groups' subscribed topics: who holds it as the broker
        reports (and the consumer protocol's target)."""
        for g, got in described.items():
            holders: dict[tuple[str, int], list[str]] = defaultdict(list)
            for member, parts in sorted(got["assignment"].items()):
                for t, ps in parts.items():
                    for p in ps:
                        holders[(t, p)].append(member)
            targets: dict[tuple[str, int], list[str]] = defaultdict(list)
            for member, parts in sorted((got["target"] or {}).items()):
                for t, ps in parts.items():
                    for p in ps:
                        targets[(t, p)].append(member)
            keys = {(t, p) for t in new.groups[g].subscriptions for p in range(self.partition_counts.get(t, 0))}
            keys |= holders.keys()
            for t, p in keys:
                who = holders.get((t, p), [])
                q: Queue = (g, t, "", p)
                new.ownership[q] = (",".join(sorted(set(who))) or None, len(who))
                if got["target"] is not None:
                    new.targets[q] = ",".join(sorted(set(targets.get((t, p), [])))) or None

    def _offsets(self, admin: Any, new: KafkaState, gaps: list[dict[str, Any]]) -> bool:
        """Committed (OffsetFetch) and log-end (ListOffsets) offsets of every partition a group
        holds or has committed on; ``False`` when neither could be read. When the committed
        offsets, the log-end offsets and the partitions held are those the last reading was made
        of, the last reading is kept as it is (not built again)."""

        committed: dict[Queue, int] = {}
        fetched = True
        groups = sorted(new.groups)
        if groups:
            try:
                committed = read_committed_offsets(admin, groups, self._offset_answers)
            except KafkaError as e:
                self._offset_answers.clear()
                gaps.append(_gap("OffsetFetch", e, address=self.bootstrap))
                fetched = False
        if not fetched:
            return False
        extra = new.ownership.keys() - committed.keys()  # held, nothing committed
        pairs = {(q[1], q[3]) for q in extra}
        if committed is not self._offsets_basis[0]:
            self._committed_pairs = {(q[1], q[3]) for q in committed}
        pairs |= self._committed_pairs
        tps = [TopicPartition(t, p) for t, p in sorted(pairs)]
        ends: dict[tuple[str, int], int] = {}
        if tps:
            try:
                latest = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
                ends = {(tp.topic, tp.partition): ot.offset for tp, ot in latest.items()}
            except KafkaError as e:
                gaps.append(_gap("ListOffsets", e, address=self.bootstrap))
                ends = {(q[1], q[3]): v[1] for q, v in self.state.offsets.items() if v[1] is not None}
        basis = (committed, ends, extra)
        last = self._offsets_basis
        if committed is last[0] and ends == last[1] and extra == last[2] and self.state.offsets is last[3]:
            new.offsets = self.state.offsets
            return True
        end_of = ends.get
        offsets: dict[Queue, tuple[int | None, int | None]] = {
            q: (c, end_of((q[1], q[3]))) for q, c in committed.items()
        }
        for q in extra:
            offsets[q] = (None, end_of((q[1], q[3])))
        new.offsets = offsets
        self._offsets_basis = (*basis, offsets)
        return True

    def _lag_time(self, new: KafkaState, gaps: list[dict[str, Any]]) -> None:
        """Lag seconds of the lagging partitions: an exact reading kept while the committed offset
        stays; the others read, most lagging first, within the budget; an earlier reading not read
        again is carried (an upper bound); none is ``unread``."""

        old = self.state
        oldest: dict[Queue, tuple[int | None, str]] = {}
        ts_types: dict[Queue, str] = {}
        todo: dict[tuple[str, str, int], int] = {}
        ends: dict[tuple[str, int], int] = {}
        for q, (c, end) in new.offsets.items():
            if c is None or end is None or end <= c:
                continue
            before = old.oldest.get(q)
            if before is not None and before[1] == "exact" and old.offsets.get(q, (None, None))[0] == c:
                oldest[q] = before
                if q in old.ts_types:
                    ts_types[q] = old.ts_types[q]
                continue
            todo[(q[0], q[1], q[3])] = c
            ends[(q[1], q[3])] = end
        found: dict[tuple[str, int, int], tuple[int, int, str]] = {}
        positions = plan_reads(todo, ends, budget=self.lag_time_budget)
        if positions:
            try:
                found = read_record_times(
                    self.bootstrap, positions, timeout=max(self.timeout, 2.0), **self._lag_config()
                )
            except KafkaError as e:
                gaps.append(_gap("Fetch", f"lag seconds: {type(e).__name__}: {e}", address=self.bootstrap))
        for (g, t, p), c in todo.items():
            q = (g, t, "", p)
            if (t, p, c) in found:
                _offset, ts, kind = found[(t, p, c)]
                oldest[q], ts_types[q] = (ts, "exact"), kind
            elif (before := old.oldest.get(q)) is not None and before[0] is not None:
                oldest[q] = (before[0], "carried")
                if q in old.ts_types:
                    ts_types[q] = old.ts_types[q]
            else:
                oldest[q] = (None, "unread")
        new.oldest, new.ts_types = oldest, ts_types

    def _lag_config(self) -> dict[str, Any]:
        cfg = dict(self.client_config)
        cfg.pop("client_id", None)
        cfg.pop("request_timeout_ms", None)
        return cfg

    # --- events and metrics ------------------------------------------------------------------------

    def changes(self, old: KafkaState, observation: Observation) -> dict[str, list[dict[str, Any]]]:
        return kafka_diff(old, observation.state, offsets=observation.offsets_read, groups=observation.hint)

    def whole(self, state: KafkaState) -> dict[str, list[dict[str, Any]]]:
        return kafka_checkpoint(state)

    def observed(self, old: Any, observation: Observation, events: Mapping[str, Any]) -> None:
        if self.metrics is not None:
            self.metrics.observe_kafka_groups(observation.state.groups)

    def close_reader(self) -> None:
        self.group_log.close()
        self._drop_admin()
