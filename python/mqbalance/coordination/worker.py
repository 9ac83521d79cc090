"""The runnable member behind ``mqbalance zk-consume``: a :class:`GroupMember` that "consumes" a
deterministic synthetic source and leaves an append-only record of what it did.

The source: partition ``p`` of a topic created at wall time ``ctime`` (its partition node's
creation time) holds messages ``0, 1, 2, …``, message ``k`` appearing at ``ctime + k / rate``
(``rate`` stored in the topic node). Processing a batch is recording it; offsets are committed
(fenced) every ``commit_interval_ms`` and on every revocation.

The record file holds one JSON object per line, ``e`` giving the kind:
``start`` / ``stop`` (``m`` member id, ``pid``), ``a`` assigned and ``r`` revoked (``q`` list of
``"topic/p"``, ``o`` offsets, ``why``), ``p`` processed (``q``, messages ``[a, b)``, interval
``[t0, t1]`` in ``time.monotonic()`` — system-wide on Linux, so comparable across processes),
``c`` committed (``q``, offset ``o``, offset-node version ``v``), ``f`` fenced commit (``q``, ``o``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

from mqbalance.coordination.errors import CommitFailedError, FencedCommitError, NoPartitionsError
from mqbalance.coordination.layout import GroupPaths, encode_partitions, parse_source_rate
from mqbalance.coordination.member import GroupMember
from mqbalance.coordination.session import short_session
from mqbalance.coordination.states import RevokeReason
from mqbalance.coordination.status import source_end
from mqbalance.kafka import TopicPartition
from mqbalance.member_process import MemberProcess, Write, run_member_process

__all__ = ["ZooKeeperMemberConfig", "run_zookeeper_member", "ensure_topics"]

log = logging.getLogger("mqbalance.coordination")


@dataclass
class ZooKeeperMemberConfig:
    """The settings of one ``mqbalance zk-consume`` process."""

    hosts: str
    group: str
    topics: Mapping[str, int | None]  # topic -> partitions to create if absent (None: must exist)
    records: Path
    client_id: str | None = None
    strategy: str = "AVG"
    mode: str = "every-member"
    rate: float = 100.0
    batch: int = 50
    work_ms: float = 0.0
    commit_interval_ms: int = 500
    session_timeout: float = 6.0
    rebalance_max_retries: int = 4
    rebalance_backoff_ms: int = 2000
    duration: float | None = None
    poll_ms: float = 10.0
    auth: tuple[str, str] | None = None
    strategy_params: dict[str, Any] = field(default_factory=dict)


def ensure_topics(hosts: str, topics: Mapping[str, int | None], rate: float, *, timeout: float = 10.0) -> None:
    """Create the partition nodes that are absent (never changes an existing one)."""
    with short_session(hosts, timeout=timeout) as client:
        for t, n in topics.items():
            path = GroupPaths.topic(t)
            if client.exists(path) is not None:
                continue
            if n is None:
                raise NoPartitionsError(f"topic {t!r} has no partition node {path}; give --topic {t}:N", t)
            with contextlib.suppress(NodeExistsError):
                client.create(path, encode_partitions(n, source_rate=rate), makepath=True)


def _q(tp: TopicPartition) -> str:
    return f"{tp.topic}/{tp.partition}"


class _SyntheticMember(MemberProcess):
    """A :class:`GroupMember` working through the synthetic source, for :func:`run_member_process`."""

    def __init__(self, cfg: ZooKeeperMemberConfig, write: Write) -> None:
        self.cfg, self.write = cfg, write
        self.work = threading.Lock()
        self.pos: dict[TopicPartition, int] = {}
        self.committed: dict[TopicPartition, int] = {}
        self.sources: dict[str, tuple[int, float]] = {}
        self.member = GroupMember(
            cfg.hosts,
            cfg.group,
            list(cfg.topics),
            client_id=cfg.client_id,
            strategy=cfg.strategy,
            strategy_params=cfg.strategy_params,
            mode=cfg.mode,
            on_assigned=self._on_assigned,
            on_revoked=self._on_revoked,
            session_timeout=cfg.session_timeout,
            rebalance_max_retries=cfg.rebalance_max_retries,
            rebalance_backoff_ms=cfg.rebalance_backoff_ms,
            auth=cfg.auth,
        )
        self.client_id = self.member.client_id
        self.margin = max(cfg.work_ms / 1000 * 2, 0.01)
        self.next_commit = 0.0

    def _commit(self, tp: TopicPartition) -> None:
        o = self.pos[tp]
        if self.committed.get(tp, -1) >= o:
            return
        try:
            v = self.member.commit(tp, o)
        except FencedCommitError:
            self.write(e="f", q=_q(tp), o=o, t=time.monotonic())
            return
        except CommitFailedError as e:
            log.info("commit of %s failed: %s", _q(tp), e)
            return
        self.committed[tp] = o
        self.write(e="c", q=_q(tp), o=o, v=v, t=time.monotonic())

    def _on_assigned(self, m: GroupMember, offsets: Mapping[TopicPartition, int]) -> None:
        with self.work:
            for tp, o in offsets.items():
                self.pos[tp] = self.committed[tp] = o
            self.write(e="a", q=[_q(tp) for tp in offsets], o=list(offsets.values()), t=time.monotonic())

    def _on_revoked(self, m: GroupMember, tps: frozenset[TopicPartition], why: RevokeReason) -> None:
        with self.work:  # waits for the batch in flight
            for tp in sorted(tps):
                if tp in self.pos and why is not RevokeReason.SESSION_LOST:
                    self._commit(tp)
                self.pos.pop(tp, None)
                self.committed.pop(tp, None)
            self.write(e="r", q=[_q(tp) for tp in sorted(tps)], why=why.value, t=time.monotonic())

    def connect(self) -> None:
        ensure_topics(self.cfg.hosts, self.cfg.topics, self.cfg.rate)

    def start(self) -> None:
        self.member.start()
        probe = KazooClient(hosts=self.cfg.hosts)  # the topics' creation times and rates, read once
        probe.start(timeout=10)
        try:
            for t in self.cfg.topics:
                raw, stat = probe.get(GroupPaths.topic(t))
                self.sources[t] = (stat.ctime, parse_source_rate(raw) or self.cfg.rate)
        finally:
            probe.stop()
            probe.close()
        self.next_commit = time.monotonic() + self.cfg.commit_interval_ms / 1000

    def step(self, stop: threading.Event) -> bool:
        cfg, member, pos = self.cfg, self.member, self.pos
        busy = False
        for tp in list(pos):
            with self.work:
                if tp not in pos:
                    continue
                deadline = member.work_deadline(tp)
                t0 = time.monotonic()
                if deadline is None or t0 > deadline - self.margin:
                    continue
                ctime, rate = self.sources[tp.topic]
                a = pos[tp]
                b = min(source_end(ctime, rate), a + cfg.batch)
                if b <= a:
                    continue
                if cfg.work_ms:
                    time.sleep(cfg.work_ms / 1000)
                t1 = time.monotonic()
                pos[tp] = b
                self.write(e="p", q=_q(tp), a=a, b=b, t0=t0, t1=t1)
                busy = True
        if time.monotonic() >= self.next_commit:
            with self.work:
                for tp in list(pos):
                    if member.may_work(tp):
                        self._commit(tp)
            self.next_commit = time.monotonic() + cfg.commit_interval_ms / 1000
        if not busy:
            stop.wait(cfg.poll_ms / 1000)
        return True

    def close(self) -> dict[str, Any]:
        self.member.close()
        return {"stats": self.member.stats.as_dict()}


def run_zookeeper_member(cfg: ZooKeeperMemberConfig, *, install_signals: bool = True) -> int:
    """Run until SIGTERM/SIGINT or ``cfg.duration``; leave gracefully. Returns the exit code. The
    life cycle is :func:`~mqbalance.member_process.run_member_process`'s; the topics' partition
    nodes are created (:func:`ensure_topics`) after the record file is opened."""
    return run_member_process(
        lambda write: _SyntheticMember(cfg, write), cfg.records, duration=cfg.duration, install_signals=install_signals
    )
