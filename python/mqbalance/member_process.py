"""One consumer-group member run as a process, whatever the product: the life cycle the three
member commands share (``mqbalance zk-consume``, ``rocketmq-consume`` and ``kafka-consume``).

Each product says how its member connects, starts, works and leaves (a :class:`MemberProcess`:
:mod:`mqbalance.coordination.worker`, :mod:`mqbalance.rocketmq.worker`,
:mod:`mqbalance.kafka.member`); :func:`run_member_process` drives it through the same steps:

1. ``build(write)``: the member with its record-writing callbacks; every setting is checked here,
   nothing is connected;
2. the record file is opened (created, or appended to: a :class:`~mqbalance.record_files.RecordWriter`);
3. ``connect()``: the cluster answers. When it raises, the member is closed and the record file
   removed if this run created it — nothing was recorded;
4. SIGTERM and SIGINT (and the member's own :meth:`MemberProcess.signals`) are handled, their
   actions run on a signal thread (:mod:`mqbalance.signal_actions`): a stop request ends the loop
   below gracefully; SIGQUIT prints every thread's stack to stderr and the member goes on (as a
   JVM does);
5. the ``start`` record (``m`` client id, ``pid``, the member's :meth:`~MemberProcess.start_fields`),
   then ``start()`` (join the group);
6. ``step(stop)`` until a stop request, ``duration`` seconds, or the member ends itself;
7. ``finish()`` (the exit code), then — also after an error — ``close()`` (leave the group) and the
   ``stop`` record.

>>> import tempfile, pathlib
>>> from mqbalance.record_files import load_records
>>> class Counter(MemberProcess):
...     client_id = "c1"
...     def __init__(self, write): self.write, self.n = write, 0
...     def connect(self): pass
...     def start(self): pass
...     def step(self, stop):
...         self.n += 1
...         self.write(e="p", n=self.n)
...         return self.n < 3  # ends itself after three steps
...     def close(self): return {"steps": self.n}
>>> f = pathlib.Path(tempfile.mkdtemp()) / "c1.jsonl"
>>> run_member_process(Counter, f, install_signals=False)
0
>>> [r["e"] for r in load_records([f])["c1"]]
['start', 'p', 'p', 'p', 'stop']
"""

from __future__ import annotations

import faulthandler
import os
import signal
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from mqbalance._validate import number
from mqbalance.record_files import RecordWriter
from mqbalance.signal_actions import signal_actions

__all__ = ["MemberProcess", "run_member_process"]

#: Writes one record: ``write(e="p", q=..., ...)``; the runner stamps ``t`` when it is not given.
Write = Callable[..., None]


class MemberProcess:
    """A product's group member as :func:`run_member_process` drives it. Subclasses implement
    :meth:`connect`, :meth:`start`, :meth:`step` and :meth:`close`; the others have defaults."""

    client_id: str | None = None
    """The ``m`` of the ``start`` and ``stop`` records."""

    def start_fields(self) -> dict[str, Any]:
        """Fields of the ``start`` record besides ``m`` and ``pid``."""
        return {}

    def signals(self) -> dict[int, Callable[[], None]]:
        """Signals of the member's own (say SIGUSR1: change the subscription), besides the stop ones."""
        return {}

    def connect(self) -> None:
        """Check the cluster answers (before the ``start`` record); raise when it does not."""
        raise NotImplementedError

    def start(self) -> None:
        """Join the group."""
        raise NotImplementedError

    def step(self, stop: threading.Event) -> bool:
        """One turn of work (waiting on ``stop`` when idle); ``False`` when the member ended itself."""
        raise NotImplementedError

    def finish(self) -> int:
        """After the loop, before :meth:`close`: the exit code (and any record saying why)."""
        return 0

    def close(self) -> dict[str, Any]:
        """Leave the group (safe before :meth:`start` too); the fields of the ``stop`` record."""
        raise NotImplementedError


def run_member_process(
    build: Callable[[Write], MemberProcess],
    records: Path,
    *,
    duration: float | None = None,
    install_signals: bool = True,
) -> int:
    """Run the member ``build`` makes until SIGTERM/SIGINT, ``duration`` seconds or its own end;
    leave gracefully. Returns the exit code (:meth:`MemberProcess.finish`). The steps, in order,
    are in the module's documentation."""
    if duration is not None:
        number(duration, "duration", positive=True)
    rec: RecordWriter | None = None

    def write(**fields: Any) -> None:
        if rec is not None:
            rec.write(**fields)

    member = build(write)
    created = not os.path.lexists(records)
    try:
        rec = RecordWriter(records)
        member.connect()
    except BaseException:
        opened, rec = rec, None
        if opened is not None:
            opened.close()
        member.close()
        if opened is not None and created and records.stat().st_size == 0:
            records.unlink()
        raise
    stop = threading.Event()
    handled: AbstractContextManager[None] = nullcontext()
    if install_signals:
        # the actions run on a signal thread, not in the handler: a handler calling stop.set()
        # while the main thread waits on stop would block on the event's lock for good
        handled = signal_actions({signal.SIGTERM: stop.set, signal.SIGINT: stop.set, **member.signals()})
        # SIGQUIT prints every thread's stack to stderr and goes on, as a JVM does: a member that
        # does not stop can be asked where it is
        faulthandler.register(signal.SIGQUIT, all_threads=True)
    with handled:
        rec.write(e="start", m=member.client_id, pid=os.getpid(), **member.start_fields())
        code = 0
        try:
            member.start()
            end_at = None if duration is None else time.monotonic() + duration
            while not stop.is_set() and (end_at is None or time.monotonic() < end_at):
                if not member.step(stop):
                    break
            code = member.finish()
        finally:
            fields: dict[str, Any] = {}
            try:
                fields = member.close()
            finally:
                rec.write(e="stop", m=member.client_id, **fields)
                rec.close()
    return code
