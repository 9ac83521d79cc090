"""Progress of long phases: timestamped lines, a bar for work of known size (:meth:`Progress.counter`),
and for Spark jobs the tasks done per stage, polled from the job's status tracker (Spark's own console
progress is switched off).

On a terminal the bar is redrawn in place; otherwise a plain line is printed when the count changes,
at most every ``interval`` seconds. ``quiet`` silences all of it.

>>> bar(3, 12, width=8)
'[##......]'
>>> say = Progress(quiet=True)
>>> say("nothing is printed")
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["Progress", "bar"]


def bar(done: int, total: int, width: int = 20) -> str:
    """``[###.....]``: ``done`` of ``total`` as a bar of ``width`` cells."""
    filled = min(width, width * done // total) if total > 0 else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"


class Progress:
    """``say(message)`` prints ``[  12.3s] message``; :meth:`spark_stages` reports running stages."""

    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.start = time.perf_counter()
        self.quiet = quiet
        self.stream = stream or sys.stdout
        self._lock = threading.Lock()
        self._open_line = False

    def __call__(self, message: str) -> None:
        if self.quiet:
            return
        with self._lock:
            if self._open_line:
                self.stream.write("\n")
                self._open_line = False
            self.stream.write(f"[{time.perf_counter() - self.start:6.1f}s] {message}\n")
            self.stream.flush()

    def _stage_line(self, text: str, tty: bool) -> None:
        with self._lock:
            stamp = f"[{time.perf_counter() - self.start:6.1f}s] {text}"
            if tty:
                self.stream.write("\r" + stamp.ljust(78))
                self._open_line = True
            else:
                self.stream.write(stamp + "\n")
            self.stream.flush()

    @contextmanager
    def spark_stages(self, spark: Any, what: str, *, interval: float = 2.0) -> Iterator[None]:
        """While the block runs, report ``what: stage S tasks done/total`` of the running stages."""
        if self.quiet:
            yield
            return
        tracker = spark.sparkContext.statusTracker()
        tty = self.stream.isatty()
        stop = threading.Event()

        def poll() -> None:
            last = ""
            while not stop.wait(0.5 if tty else interval):
                parts = []
                for stage in sorted(tracker.getActiveStageIds()):
                    info = tracker.getStageInfo(stage)
                    if info is not None:
                        done, total = info.numCompletedTasks, info.numTasks
                        shown = f"{bar(done, total)} " if tty else ""
                        parts.append(f"stage {stage} {shown}{done}/{total} tasks")
                text = f"{what}: {', '.join(parts)}" if parts else ""
                if text and text != last:
                    self._stage_line(text, tty)
                    last = text

        thread = threading.Thread(target=poll, name="mqbalance-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self._end_line()

    @contextmanager
    def counter(self, what: str, unit: str, *, interval: float = 2.0) -> Iterator[Callable[[int, int], None]]:
        """A bar for work of known size: the block calls ``update(done, total)`` as it goes.

        >>> import io
        >>> out = io.StringIO()
        >>> with Progress(stream=out).counter("assign", "queues", interval=0) as update:
        ...     update(1, 4); update(4, 4)
        >>> [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
        ['assign: 1/4 queues (25%)', 'assign: 4/4 queues (100%)']
        """
        if self.quiet:
            yield lambda done, total: None
            return
        tty = self.stream.isatty()
        last = -interval

        def update(done: int, total: int) -> None:
            nonlocal last
            now = time.perf_counter()
            if done < total and now - last < (0.2 if tty else interval):
                return
            last = now
            pct = 100 * done // total if total > 0 else 100
            shown = f"{bar(done, total)} " if tty else ""
            self._stage_line(f"{what}: {shown}{done:,}/{total:,} {unit} ({pct}%)", tty)

        try:
            yield update
        finally:
            self._end_line()

    def _end_line(self) -> None:
        """End a bar left open on a terminal."""
        with self._lock:
            if self._open_line:
                self.stream.write("\n")
                self._open_line = False
