"""The runnable member behind ``mqbalance consume``: a :class:`~.member.RocketMQMember` whose
``consume`` callback records every message it processed in an append-only file, like
``mqbalance member`` does for ZooKeeper (:mod:`mqbalance.coordination.worker`): a
:class:`MemberConfig` run by :func:`run_member`.

The record file (a :class:`~mqbalance.record_files.RecordWriter`) holds one JSON object per line,
``e`` giving the kind, ``t`` a ``time.monotonic()`` stamp (system-wide on Linux, so comparable
across processes): ``start`` (``m`` client id, ``pid``), ``a`` assigned (``q`` list of
``"broker/topic/queue"``, ``o`` start offsets), ``r`` revoked (``q``), ``p`` processed (``q``, queue
offsets ``[a, b)``, ``n`` messages, ``t0``/``t1``), ``c`` committed (``q``, offset ``o``), ``n``
notified by the broker, ``rb`` rebalanced (``notified``: when the notification that caused it
arrived, or null), ``dup`` duplicated client id seen (``listed``, ``others``), ``refused``, ``err``
(``w`` what, ``msg``), ``stop`` (``stats``). :mod:`.records` checks them.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from mqbalance._validate import number
from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.registry import StrategyName
from mqbalance.exceptions import MQBalanceError, RemotingConnectError, RemotingTimeoutError
from mqbalance.rebalance.client import ConsumeFromWhere
from mqbalance.record_files import RecordWriter
from mqbalance.rocketmq.member import MemberState, RocketMQMember
from mqbalance.rocketmq.transport import DuplicateClientId, PulledMessage

__all__ = ["MemberConfig", "run_member", "queue_name", "EXIT_REFUSED"]

log = logging.getLogger("mqbalance.rocketmq")

EXIT_REFUSED = 4
"""``mqbalance consume`` exit code when it refused to consume (its client id is in use)."""


def queue_name(mq: MessageQueue) -> str:
    """``"broker/topic/queue"``, the records' queue key."""
    return f"{mq.broker_name}/{mq.topic}/{mq.queue_id}"


@dataclass
class MemberConfig:
    """The settings of one ``mqbalance consume`` process; ``strategy`` and ``strategy_params`` go to
    :class:`~.member.RocketMQMember` unchanged (any name of the registry's
    ``names_for(Use.ROCKETMQ_CLIENT)``, checked there)."""

    namesrv: str
    group: str
    topics: list[str]
    records: Path
    client_id: str | None = None
    strategy: str = StrategyName.AVG.value
    strategy_params: dict[str, Any] = field(default_factory=dict)
    semantics: str = "5.x"
    consume_from: str = "last"  # or "first"
    refuse_duplicate_id: bool = False
    duration: float | None = None
    work_ms: float = 0.0
    timeout: float = 3.0
    heartbeat_interval_ms: int = 30_000
    persist_interval_ms: int = 5_000
    rebalance_interval_ms: int = 20_000


def _check_name_servers(member: RocketMQMember) -> None:
    """One route request for the member's first topic: none of its name servers answering is an
    error at start (the running member would only retry); any answer, even "no such topic", is fine."""
    try:
        member.transport.names.topic_route(member.topics[0])
    except (RemotingConnectError, RemotingTimeoutError):
        raise
    except MQBalanceError:  # an answer (the topic may be created later): the member retries
        return


def run_member(cfg: MemberConfig, *, install_signals: bool = True) -> int:
    """Run until SIGTERM/SIGINT or ``cfg.duration``; leave gracefully. Returns the exit code
    (:data:`EXIT_REFUSED` when it refused a duplicated client id).

    Checked before anything starts, in this order: every setting (the member's constructor), the
    record file (created, or appended to), the name servers (one route request: a
    :class:`~mqbalance.exceptions.RemotingConnectError` when none answers — the record file is
    then removed if this call created it)."""
    if cfg.duration is not None:
        number(cfg.duration, "duration", positive=True)
    number(cfg.work_ms, "work_ms")
    stop = threading.Event()
    rec: RecordWriter | None = None

    def write(**fields: Any) -> None:
        if rec is not None:
            rec.write(**fields)

    def consume(mq: MessageQueue, messages: Sequence[PulledMessage]) -> None:
        t0 = time.monotonic()
        if cfg.work_ms:
            time.sleep(cfg.work_ms / 1000)
        offsets = [m.queue_offset for m in messages]
        write(e="p", q=queue_name(mq), a=min(offsets), b=max(offsets) + 1, n=len(offsets), t0=t0, t1=time.monotonic())

    def duplicate(found: DuplicateClientId) -> None:
        write(e="dup", listed=found.listed, own=found.own_address, others=list(found.other_addresses))

    member = RocketMQMember(
        cfg.namesrv,
        cfg.group,
        cfg.topics,
        consume=consume,
        strategy=cfg.strategy,
        strategy_params=cfg.strategy_params,
        client_id=cfg.client_id,
        semantics=cfg.semantics,
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET
        if cfg.consume_from == "first"
        else ConsumeFromWhere.LAST_OFFSET,
        refuse_duplicate_id=cfg.refuse_duplicate_id,
        timeout=cfg.timeout,
        heartbeat_interval_ms=cfg.heartbeat_interval_ms,
        persist_interval_ms=cfg.persist_interval_ms,
        rebalance_wait_interval_ms=cfg.rebalance_interval_ms,
        on_assigned=lambda mqs, offs: write(e="a", q=[queue_name(q) for q in mqs], o=offs),
        on_revoked=lambda mqs: write(e="r", q=[queue_name(q) for q in mqs]),
        on_commit=lambda mq, o: write(e="c", q=queue_name(mq), o=o),
        on_error=lambda what, e: write(e="err", w=what, msg=str(e)[:300]),
        on_duplicate_id=duplicate,
        on_notified=lambda: write(e="n"),
        on_rebalanced=lambda notified_ms: write(e="rb", notified=notified_ms),
    )
    created = not os.path.lexists(cfg.records)
    try:
        rec = RecordWriter(cfg.records)
        _check_name_servers(member)
    except BaseException:
        member.close()
        if rec is not None:
            rec.close()
            if created and cfg.records.stat().st_size == 0:
                cfg.records.unlink()
        raise
    if install_signals:

        def _stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    rec.write(e="start", m=member.client_id, pid=os.getpid(), group=cfg.group, strategy=cfg.strategy)
    code = 0
    try:
        member.start()
        end_at = None if cfg.duration is None else time.monotonic() + cfg.duration
        while not stop.is_set() and member.state is MemberState.RUNNING:
            if end_at is not None and time.monotonic() >= end_at:
                break
            stop.wait(0.1)
        if member.state is MemberState.REFUSED:
            rec.write(e="refused", m=member.client_id)
            code = EXIT_REFUSED
    finally:
        member.close()
        rec.write(e="stop", m=member.client_id, stats=member.stats.as_dict())
        rec.close()
    return code
