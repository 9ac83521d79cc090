"""The runnable member behind ``mqbalance rocketmq-consume``: a :class:`~.member.RocketMQMember`
whose ``consume`` callback records every message it processed in an append-only file, like
``mqbalance zk-consume`` does for ZooKeeper (:mod:`mqbalance.coordination.worker`): a
:class:`RocketMQMemberConfig` run by :func:`run_rocketmq_member` through the shared life cycle of
:mod:`mqbalance.member_process`.

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
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqbalance._validate import number
from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.registry import StrategyName
from mqbalance.exceptions import MQBalanceError, RemotingConnectError, RemotingTimeoutError
from mqbalance.member_process import MemberProcess, Write, run_member_process
from mqbalance.rebalance.client import ConsumeFromWhere
from mqbalance.rocketmq.member import MemberState, RocketMQMember
from mqbalance.rocketmq.transport import DuplicateClientId, PulledMessage

__all__ = ["RocketMQMemberConfig", "run_rocketmq_member", "queue_name", "EXIT_REFUSED"]

log = logging.getLogger("mqbalance.rocketmq")

EXIT_REFUSED = 4
"""``mqbalance rocketmq-consume`` exit code when it refused to consume (its client id is in use)."""


def queue_name(mq: MessageQueue) -> str:
    """``"broker/topic/queue"``, the records' queue key."""
    return f"{mq.broker_name}/{mq.topic}/{mq.queue_id}"


@dataclass
class RocketMQMemberConfig:
    """The settings of one ``mqbalance rocketmq-consume`` process; ``strategy`` and ``strategy_params`` go to
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


class _RecordingMember(MemberProcess):
    """A :class:`~.member.RocketMQMember` whose callbacks write records, for :func:`run_member_process`."""

    def __init__(self, cfg: RocketMQMemberConfig, write: Write) -> None:
        number(cfg.work_ms, "work_ms")
        self.cfg, self.write = cfg, write
        self.member = RocketMQMember(
            cfg.namesrv,
            cfg.group,
            cfg.topics,
            consume=self._consume,
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
            on_duplicate_id=self._duplicate,
            on_notified=lambda: write(e="n"),
            on_rebalanced=lambda notified_ms: write(e="rb", notified=notified_ms),
        )
        self.client_id = self.member.client_id

    def _consume(self, mq: MessageQueue, messages: Sequence[PulledMessage]) -> None:
        t0 = time.monotonic()
        if self.cfg.work_ms:
            time.sleep(self.cfg.work_ms / 1000)
        offsets = [m.queue_offset for m in messages]
        self.write(
            e="p", q=queue_name(mq), a=min(offsets), b=max(offsets) + 1, n=len(offsets), t0=t0, t1=time.monotonic()
        )

    def _duplicate(self, found: DuplicateClientId) -> None:
        self.write(e="dup", listed=found.listed, own=found.own_address, others=list(found.other_addresses))

    def start_fields(self) -> dict[str, Any]:
        return {"group": self.cfg.group, "strategy": self.cfg.strategy}

    def connect(self) -> None:
        """One route request for the member's first topic: none of its name servers answering is
        an error at start (the running member would only retry); any answer, even "no such
        topic", is fine."""
        try:
            self.member.transport.names.topic_route(self.member.topics[0])
        except (RemotingConnectError, RemotingTimeoutError):
            raise
        except MQBalanceError:  # an answer (the topic may be created later): the member retries
            return

    def start(self) -> None:
        self.member.start()

    def step(self, stop: threading.Event) -> bool:
        if self.member.state is not MemberState.RUNNING:
            return False
        stop.wait(0.1)
        return True

    def finish(self) -> int:
        if self.member.state is MemberState.REFUSED:
            self.write(e="refused", m=self.member.client_id)
            return EXIT_REFUSED
        return 0

    def close(self) -> dict[str, Any]:
        self.member.close()
        return {"stats": self.member.stats.as_dict()}


def run_rocketmq_member(cfg: RocketMQMemberConfig, *, install_signals: bool = True) -> int:
    """Run until SIGTERM/SIGINT or ``cfg.duration``; leave gracefully. Returns the exit code
    (:data:`EXIT_REFUSED` when it refused a duplicated client id).

    The life cycle is :func:`~mqbalance.member_process.run_member_process`'s. Checked before
    anything starts, in this order: every setting (the member's constructor), the record file
    (created, or appended to), the name servers (one route request: a
    :class:`~mqbalance.exceptions.RemotingConnectError` when none answers — the record file is
    then removed if this call created it)."""
    return run_member_process(
        lambda write: _RecordingMember(cfg, write), cfg.records, duration=cfg.duration, install_signals=install_signals
    )
