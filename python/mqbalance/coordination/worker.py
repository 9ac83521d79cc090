"""The runnable member behind ``mqbalance member``: a :class:`GroupMember` that "consumes" a
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
import os
import signal
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

from mqbalance.coordination.layout import GroupPaths, encode_partitions, parse_source_rate
from mqbalance.coordination.member import GroupMember
from mqbalance.coordination.session import short_session
from mqbalance.coordination.states import RevokeReason
from mqbalance.coordination.status import source_end
from mqbalance.exceptions import CommitFailedError, FencedCommitError, NoPartitionsError
from mqbalance.kafka import TopicPartition
from mqbalance.record_files import RecordWriter

__all__ = ["MemberConfig", "run_member", "ensure_topics"]

log = logging.getLogger("mqbalance.coordination")


@dataclass
class MemberConfig:
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


def run_member(cfg: MemberConfig, *, install_signals: bool = True) -> int:
    """Run until SIGTERM/SIGINT or ``cfg.duration``; leave gracefully. Returns the exit code."""
    ensure_topics(cfg.hosts, cfg.topics, cfg.rate)
    rec = RecordWriter(cfg.records)
    stop = threading.Event()
    work = threading.Lock()
    pos: dict[TopicPartition, int] = {}
    committed: dict[TopicPartition, int] = {}
    sources: dict[str, tuple[int, float]] = {}

    def commit(m: GroupMember, tp: TopicPartition) -> None:
        o = pos[tp]
        if committed.get(tp, -1) >= o:
            return
        try:
            v = m.commit(tp, o)
        except FencedCommitError:
            rec.write(e="f", q=_q(tp), o=o, t=time.monotonic())
            return
        except CommitFailedError as e:
            log.info("commit of %s failed: %s", _q(tp), e)
            return
        committed[tp] = o
        rec.write(e="c", q=_q(tp), o=o, v=v, t=time.monotonic())

    def on_assigned(m: GroupMember, offsets: Mapping[TopicPartition, int]) -> None:
        with work:
            for tp, o in offsets.items():
                pos[tp] = committed[tp] = o
            rec.write(e="a", q=[_q(tp) for tp in offsets], o=list(offsets.values()), t=time.monotonic())

    def on_revoked(m: GroupMember, tps: frozenset[TopicPartition], why: RevokeReason) -> None:
        with work:  # waits for the batch in flight
            for tp in sorted(tps):
                if tp in pos and why is not RevokeReason.SESSION_LOST:
                    commit(m, tp)
                pos.pop(tp, None)
                committed.pop(tp, None)
            rec.write(e="r", q=[_q(tp) for tp in sorted(tps)], why=why.value, t=time.monotonic())

    member = GroupMember(
        cfg.hosts,
        cfg.group,
        list(cfg.topics),
        client_id=cfg.client_id,
        strategy=cfg.strategy,
        strategy_params=cfg.strategy_params,
        mode=cfg.mode,
        on_assigned=on_assigned,
        on_revoked=on_revoked,
        session_timeout=cfg.session_timeout,
        rebalance_max_retries=cfg.rebalance_max_retries,
        rebalance_backoff_ms=cfg.rebalance_backoff_ms,
        auth=cfg.auth,
    )
    if install_signals:

        def _stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    rec.write(e="start", m=member.client_id, pid=os.getpid(), t=time.monotonic())
    member.start()
    probe = KazooClient(hosts=cfg.hosts)  # the topics' creation times and rates, read once
    probe.start(timeout=10)
    try:
        for t in cfg.topics:
            raw, stat = probe.get(GroupPaths.topic(t))
            sources[t] = (stat.ctime, parse_source_rate(raw) or cfg.rate)
    finally:
        probe.stop()
        probe.close()
    end_at = None if cfg.duration is None else time.monotonic() + cfg.duration
    next_commit = time.monotonic() + cfg.commit_interval_ms / 1000
    margin = max(cfg.work_ms / 1000 * 2, 0.01)
    try:
        while not stop.is_set() and (end_at is None or time.monotonic() < end_at):
            busy = False
            for tp in list(pos):
                with work:
                    if tp not in pos:
                        continue
                    deadline = member.work_deadline(tp)
                    t0 = time.monotonic()
                    if deadline is None or t0 > deadline - margin:
                        continue
                    ctime, rate = sources[tp.topic]
                    a = pos[tp]
                    b = min(source_end(ctime, rate), a + cfg.batch)
                    if b <= a:
                        continue
                    if cfg.work_ms:
                        time.sleep(cfg.work_ms / 1000)
                    t1 = time.monotonic()
                    pos[tp] = b
                    rec.write(e="p", q=_q(tp), a=a, b=b, t0=t0, t1=t1)
                    busy = True
            if time.monotonic() >= next_commit:
                with work:
                    for tp in list(pos):
                        if member.may_work(tp):
                            commit(member, tp)
                next_commit = time.monotonic() + cfg.commit_interval_ms / 1000
            if not busy:
                stop.wait(cfg.poll_ms / 1000)
    finally:
        member.close()
        rec.write(e="stop", m=member.client_id, t=time.monotonic(), stats=member.stats.as_dict())
        rec.close()
    return 0
