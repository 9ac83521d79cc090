"""A test's background loop (a producer or consumer paced by the clock) whose failure the test
reports: an exception in a thread would only print, so it is kept in ``error`` and the test
asserts on it.

Example:
    >>> class Ticker(PacedThread):
    ...     def __init__(self) -> None:
    ...         super().__init__(period=0.01)
    ...         self.n = 0
    ...     def step(self) -> bool:
    ...         self.n += 1
    ...         return self.n < 3
    >>> t = Ticker()
    >>> t.start(); t.thread.join(5); (t.n, t.error)
    (3, None)
"""

from __future__ import annotations

import threading


class PacedThread:
    """Calls :meth:`step` every ``period`` seconds from a daemon thread until it returns False or
    :meth:`halt` is called; the first exception ends the loop and is kept in ``error``."""

    def __init__(self, *, period: float) -> None:
        self.period = period
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def step(self) -> bool:
        """One round of the loop; False ends it."""
        raise NotImplementedError

    def halt(self, timeout: float = 30.0) -> None:
        """Stop the loop and wait for the thread."""
        self.stop.set()
        self.thread.join(timeout)

    def _run(self) -> None:
        try:
            while not self.stop.wait(self.period) and self.step():
                pass
        except BaseException as e:  # noqa: BLE001  (said by the test)
            self.error = e
