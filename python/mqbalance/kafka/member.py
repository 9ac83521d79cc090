"""The runnable member behind ``mqbalance kafka-consume``: one kafka-python ``KafkaConsumer`` in a
consumer group on a real Kafka-protocol broker, with a chosen assignor (ours from
:mod:`mqbalance.kafka.kafka_python`, or kafka-python's own), recording what it was given and what
it processed in an append-only file, like ``mqbalance rocketmq-consume`` does on RocketMQ
(:mod:`mqbalance.rocketmq.worker`): a :class:`KafkaMemberConfig` run by :func:`run_kafka_member`
through the shared life cycle of :mod:`mqbalance.member_process`.

The record file (a :class:`~mqbalance.record_files.RecordWriter`; ``t`` is ``time.monotonic()``,
comparable across processes on Linux) holds, by ``e``: ``start`` (``m`` client id, ``pid``,
``assignor``, ``impl``), ``g`` a generation completed (``gen``, ``mid`` member id, ``q`` the
assignment as ``"topic/partition"`` keys), ``L`` the leader's assignment of a generation (``gen``,
``counts`` partitions per topic it saw, ``members``: id, topics, ``ud`` sticky userData in hex,
``owned``, ``ogen`` the subscription's generation; ``out``: member id → keys), ``a`` assigned /
``r`` revoked / ``lost`` (``q``), ``p`` processed (``q``, offsets ``[a, b)``, ``n``, ``t0``/``t1``),
``c`` committed (``q``, ``o``), ``sub`` subscription changed (``topics``), ``err`` (``w``, ``msg``),
``leave`` (closing: the revocation that follows is the leave's), ``stop``. The checks of
:mod:`mqbalance.rocketmq.records` read the ``p`` records unchanged (``q`` is a queue key).

>>> key("orders", 3)
'orders/3'
>>> sorted(ASSIGNOR_CLASSES["mqbalance"]) == sorted(ASSIGNOR_CLASSES["kafka-python"])
True
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor as KPCooperativeSticky
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.errors import KafkaError, KafkaTimeoutError
from kafka.structs import OffsetAndMetadata

from mqbalance._validate import number
from mqbalance.exceptions import InvalidInputError, RemotingConnectError
from mqbalance.kafka import kafka_python
from mqbalance.kafka.client_errors import explained_failures
from mqbalance.member_process import MemberProcess, Write, run_member_process

__all__ = ["KafkaMemberConfig", "run_kafka_member", "check_bootstrap", "key", "ASSIGNOR_CLASSES", "IMPLEMENTATIONS"]

log = logging.getLogger("mqbalance.kafka")

#: Assignor classes by implementation, then by Kafka's name.
ASSIGNOR_CLASSES: dict[str, dict[str, type]] = {
    "mqbalance": {c.name: c for c in (getattr(kafka_python, n) for n in kafka_python.__all__)},
    "kafka-python": {
        c.name: c
        for c in (RangePartitionAssignor, RoundRobinPartitionAssignor, StickyPartitionAssignor, KPCooperativeSticky)
    },
}
IMPLEMENTATIONS = tuple(ASSIGNOR_CLASSES)


def key(topic: str, partition: int) -> str:
    """``"topic/partition"``, the records' queue key."""
    return f"{topic}/{partition}"


def _keys(tps: Any) -> list[str]:
    return sorted(key(tp.topic, tp.partition) for tp in tps)


@dataclass
class KafkaMemberConfig:
    """The settings of one ``mqbalance kafka-consume`` process."""

    bootstrap: str
    group: str
    topics: list[str]
    records: Path
    assignor: str = "range"
    implementation: str = "mqbalance"
    client_id: str | None = None
    duration: float | None = None
    work_ms: float = 0.0
    session_timeout_ms: int = 6_000
    heartbeat_interval_ms: int = 500
    max_poll_interval_ms: int = 10_000
    connect_timeout: float = 5.0
    extra_topics: list[str] = field(default_factory=list)
    """Topics added to the subscription on SIGUSR1 (a running member changing its subscription)."""
    client_config: Mapping[str, Any] = field(default_factory=dict)
    """kafka-python's security settings (:func:`mqbalance.kafka.client_config.load_client_config`)."""

    def __post_init__(self) -> None:
        if self.implementation not in ASSIGNOR_CLASSES:
            raise InvalidInputError(
                f"implementation must be one of {', '.join(IMPLEMENTATIONS)}, got {self.implementation!r}",
                self.implementation,
            )
        if self.assignor not in ASSIGNOR_CLASSES[self.implementation]:
            names = ", ".join(ASSIGNOR_CLASSES[self.implementation])
            raise InvalidInputError(f"assignor must be one of {names}, got {self.assignor!r}", self.assignor)
        if not self.topics or any(not isinstance(t, str) or not t for t in self.topics):
            raise InvalidInputError(f"topics must be non-empty topic names, got {self.topics!r}", self.topics)
        if self.duration is not None:
            number(self.duration, "duration", positive=True)
        number(self.work_ms, "work_ms")
        number(self.connect_timeout, "connect_timeout", positive=True)
        for name in ("session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InvalidInputError(f"{name} must be a positive int, got {value!r}", value)


def _subscription_fields(metadata: Any) -> dict[str, Any]:
    ud = getattr(metadata, "user_data", None)
    owned = [[tp.topic, p] for tp in (getattr(metadata, "owned_partitions", None) or ()) for p in tp.partitions]
    gen = getattr(metadata, "generation_id", -1)
    return {
        "topics": sorted(metadata.topics),
        "ud": bytes(ud).hex() if ud else "",
        "owned": owned,
        "ogen": -1 if gen is None else gen,
    }


def _instrument(assignor: Any, write: Callable[..., None], coordinator: Callable[[], Any]) -> None:
    """Record the leader's inputs and outputs (``L``) and each completed generation (``g``) by
    wrapping this one instance's ``assign`` and ``on_assignment``; the class is untouched."""
    assign, on_assignment = assignor.assign, assignor.on_assignment

    def recording_assign(cluster: Any, members: Any) -> Any:
        out = assign(cluster, members)
        topics = sorted({t for m in members for t in m.metadata.topics})
        write(
            e="L",
            gen=coordinator()._generation.generation_id,
            counts={t: len(cluster.partitions_for_topic(t) or ()) for t in topics},
            members=[
                {"id": m.member_id, "iid": getattr(m, "group_instance_id", None), **_subscription_fields(m.metadata)}
                for m in members
            ],
            out={mid: _keys(a.partitions()) for mid, a in out.items()},
        )
        return out

    def recording_on_assignment(assignment: Any, generation: int | None = None) -> None:
        on_assignment(assignment, generation)
        g = coordinator()._generation
        write(e="g", gen=g.generation_id, mid=g.member_id, q=_keys(assignment.partitions()))

    assignor.assign = recording_assign
    assignor.on_assignment = recording_on_assignment


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]  # kafka-python is untyped
    def __init__(self, write: Callable[..., None], commit: Callable[[], None]) -> None:
        self.write, self.commit = write, commit

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.commit()
        self.write(e="r", q=_keys(revoked))

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.write(e="a", q=_keys(assigned))

    def on_partitions_lost(self, lost: Any) -> None:
        self.write(e="lost", q=_keys(lost))


def check_bootstrap(bootstrap: str, timeout: float) -> None:
    """A :class:`~mqbalance.exceptions.RemotingConnectError` naming ``bootstrap`` when none of its
    ``HOST:PORT`` addresses accepts a TCP connection within ``timeout`` seconds (kafka-python would
    retry for 30 s and then say little).

    >>> check_bootstrap("127.0.0.1:1", 1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mqbalance.exceptions.RemotingConnectError: no Kafka broker answered at 127.0.0.1:1 within 1 s ...
    """
    reasons = []
    for addr in bootstrap.split(","):
        host, sep, port = addr.strip().rpartition(":")
        if not sep or not port.isdigit() or not host or not 0 < int(port) < 65536:
            raise InvalidInputError(f"bootstrap address must be HOST:PORT (port 1-65535), got {addr!r}", bootstrap)
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
            return
        except (OSError, ValueError, UnicodeError) as e:  # refused, unreachable, unresolvable, a NUL
            reasons.append(f"{addr.strip()}: {getattr(e, 'strerror', None) or e}")
    raise RemotingConnectError(
        f"no Kafka broker answered at {bootstrap} within {timeout:g} s ({'; '.join(reasons)})", bootstrap
    )


def _consumer(cfg: KafkaMemberConfig, instance: Any) -> Any:
    return KafkaConsumer(
        bootstrap_servers=cfg.bootstrap.split(","),
        group_id=cfg.group,
        client_id=cfg.client_id or f"mqbalance-{os.getpid()}",
        partition_assignment_strategy=[instance],
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=cfg.session_timeout_ms,
        heartbeat_interval_ms=cfg.heartbeat_interval_ms,
        max_poll_interval_ms=cfg.max_poll_interval_ms,
        metadata_max_age_ms=2_000,
        request_timeout_ms=max(cfg.max_poll_interval_ms + 5_000, 30_000),
        bootstrap_timeout_ms=int(cfg.connect_timeout * 1000),
        **cfg.client_config,
    )


class _KafkaConsumerMember(MemberProcess):
    """A ``KafkaConsumer`` whose assignor and listener write records, for :func:`run_member_process`."""

    def __init__(self, cfg: KafkaMemberConfig, write: Write) -> None:
        self.cfg, self.write = cfg, write
        self.client_id = cfg.client_id
        self.instance = ASSIGNOR_CLASSES[cfg.implementation][cfg.assignor]()
        self.consumer: Any = None
        self.pending: dict[TopicPartition, int] = {}
        self.resubscribe = threading.Event()
        self.listener = _Listener(write, self._commit)

    def _commit(self) -> None:
        if not self.pending:
            return
        offsets = {tp: OffsetAndMetadata(o, "", -1) for tp, o in self.pending.items()}
        try:
            self.consumer.commit(offsets)
        except KafkaError as e:  # a rebalance under way: the next owner re-reads from the last commit
            self.write(e="err", w="commit", msg=str(e)[:300])
            self.pending.clear()
            return
        for tp, o in offsets.items():
            self.write(e="c", q=key(tp.topic, tp.partition), o=o.offset)
        self.pending.clear()

    def start_fields(self) -> dict[str, Any]:
        return {"group": self.cfg.group, "assignor": self.cfg.assignor, "impl": self.cfg.implementation}

    def signals(self) -> dict[int, Callable[[], None]]:
        return {signal.SIGUSR1: self.resubscribe.set}

    def connect(self) -> None:
        """A bootstrap address that does not answer is a
        :class:`~mqbalance.exceptions.RemotingConnectError` (a refused SASL login an
        :class:`~mqbalance.exceptions.AuthenticationFailedError`, a failed TLS handshake a
        :class:`~mqbalance.exceptions.TlsHandshakeError`); then the consumer subscribes."""
        cfg = self.cfg
        check_bootstrap(cfg.bootstrap, cfg.connect_timeout)
        try:
            with explained_failures(cfg.bootstrap, cfg.client_config):
                self.consumer = _consumer(cfg, self.instance)
        except KafkaTimeoutError:  # accepted the connection, never answered a Kafka request
            raise RemotingConnectError(
                f"no Kafka broker answered at {cfg.bootstrap} within {cfg.connect_timeout:g} s (connected, no answer)",
                cfg.bootstrap,
            ) from None
        _instrument(self.instance, self.write, lambda: self.consumer._coordinator)
        self.consumer.subscribe(cfg.topics, listener=self.listener)

    def start(self) -> None:
        """Joining happens in the first :meth:`step`'s poll."""

    def step(self, stop: threading.Event) -> bool:
        cfg, consumer = self.cfg, self.consumer
        if self.resubscribe.is_set():
            self.resubscribe.clear()
            topics = sorted({*cfg.topics, *cfg.extra_topics})
            self.write(e="sub", topics=topics)
            consumer.subscribe(topics, listener=self.listener)
        try:
            coordinator = consumer._coordinator
            if coordinator._join_task is not None:
                # kafka-python 3.0.12: a poll whose wait for a join timed out leaves the join to the
                # next call, but a leader's rejoin stops asking for itself once it has computed the
                # assignment: nothing reads the SyncGroup answer, heartbeats stay off and the member
                # never completes its generation. Ask again: a join under way is then awaited, a
                # finished one repeated.
                coordinator.request_rejoin()
            if coordinator.need_rejoin():
                # awaited whole (up to the rebalance timeout the broker allows), not in 100 ms slices
                coordinator.ensure_active_group(timeout_ms=cfg.max_poll_interval_ms + 5_000)
            batches = consumer.poll(timeout_ms=100, max_records=100)
        except KafkaError as e:
            self.write(e="err", w="poll", msg=str(e)[:300])
            return True
        for tp, records in batches.items():
            t0 = time.monotonic()
            if cfg.work_ms:
                time.sleep(cfg.work_ms / 1000)
            offsets = [r.offset for r in records]
            self.write(
                e="p",
                q=key(tp.topic, tp.partition),
                a=min(offsets),
                b=max(offsets) + 1,
                n=len(offsets),
                t0=t0,
                t1=time.monotonic(),
            )
            self.pending[tp] = max(offsets) + 1
        self._commit()
        return True

    def close(self) -> dict[str, Any]:
        if self.consumer is not None:
            self.write(e="leave")
            self.consumer.close()
        return {}


def run_kafka_member(cfg: KafkaMemberConfig, *, install_signals: bool = True) -> int:
    """Consume until SIGTERM/SIGINT or ``cfg.duration``, committing after every processed batch
    (and before partitions are revoked); then leave the group gracefully. Returns the exit code.
    The life cycle is :func:`~mqbalance.member_process.run_member_process`'s.

    A bootstrap address that does not answer is a
    :class:`~mqbalance.exceptions.RemotingConnectError`; the record file is then removed if this
    call created it."""
    return run_member_process(
        lambda write: _KafkaConsumerMember(cfg, write),
        cfg.records,
        duration=cfg.duration,
        install_signals=install_signals,
    )
