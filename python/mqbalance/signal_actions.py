"""Signal actions that take locks safely: each action runs on a thread of its own, not inside the
signal handler.

Python runs a signal's handler on the main thread, between two of its byte codes, and that can be
while the main thread holds a lock. A handler that calls ``stop.set()`` while the main thread is
inside ``stop.wait(timeout)`` (it holds the event's lock just before and just after the wait)
blocks on that lock forever, and the process no longer stops on SIGTERM. So in
:func:`signal_actions` the C-level handler writes the signal's number to a pipe
(:func:`signal.set_wakeup_fd`). A *signal thread* reads the pipe and runs the action, and the
Python-level handler takes no lock. The optional ``interrupt`` runs in the handler itself, on the
main thread; it must take no lock. It may raise, to give up what the main thread is doing.

>>> import os, signal, threading
>>> stop = threading.Event()
>>> with signal_actions({signal.SIGUSR1: stop.set}):
...     os.kill(os.getpid(), signal.SIGUSR1)
...     stop.wait(10)
True
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["signal_actions"]

#: How long leaving :func:`signal_actions` waits for an action under way to finish.
_JOIN_S = 5.0


@contextmanager
def signal_actions(
    actions: Mapping[int, Callable[[], None]],
    *,
    interrupt: Callable[[int], None] | None = None,
) -> Iterator[None]:
    """Within the block, each signal of ``actions`` runs its action on the signal thread (in the
    order the signals came). ``interrupt(signum)`` runs in the handler, on the main thread.
    Leaving the block puts back the handlers and the wakeup fd that were there before. It must be
    entered on the main thread, with no wakeup fd set (no asyncio loop running)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # the C handler must never block; a full pipe drops a byte
    try:
        previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        raise
    if previous_fd != -1:
        signal.set_wakeup_fd(previous_fd)
        os.close(read_fd)
        os.close(write_fd)
        raise RuntimeError(f"signal_actions: a wakeup fd ({previous_fd}) is set already (an asyncio loop?)")

    def handle(signum: int, frame: FrameType | None) -> None:
        if interrupt is not None:
            interrupt(signum)

    def dispatch() -> None:
        while True:
            try:
                received = os.read(read_fd, 64)
            except OSError:
                return
            if not received:  # the write end closed: the block was left
                return
            for signum in received:
                action = actions.get(signum)
                if action is not None:
                    action()

    previous: dict[int, Any] = {}
    thread = threading.Thread(target=dispatch, name="signal-actions", daemon=True)
    try:
        for signum in actions:
            previous[signum] = signal.signal(signum, handle)
        thread.start()
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
        signal.set_wakeup_fd(-1)
        os.close(write_fd)
        if thread.ident is not None:
            thread.join(_JOIN_S)
        if not thread.is_alive():  # else an action is stuck: its thread keeps the read end
            os.close(read_fd)
