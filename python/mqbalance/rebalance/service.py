"""``RebalanceService``: *when* a client rebalances (RocketMQ `RebalanceService`), as a state machine over injected
time — the thread's loop with the waits made explicit.

4.x: wait ``wait_interval_ms`` (20 s) or until woken, then rebalance; forever. 5.2+
(``min_interval_ms`` = 1000): after waking, if less than ``min_interval_ms`` has passed since the
last rebalance (the first "last" is the service's creation) wait the remainder; after a rebalance
wait ``wait_interval_ms`` if every consumer reported balanced, else ``min_interval_ms``. Wake-ups
(consumer start, the broker's ``NOTIFY_CONSUMER_IDS_CHANGED``) end the current wait at once.

>>> s = RebalanceService(created_ms=0, min_interval_ms=1000)   # 5.x
>>> s.wakeup(now_ms=0); s.next_ms                               # started: woken at once...
0
>>> s.run(now_ms=0, rebalance=lambda: True) is None, s.next_ms  # ...but 1 s must pass since creation
(True, 1000)
>>> s.run(now_ms=1000, rebalance=lambda: True), s.next_ms       # rebalanced, balanced: 20 s
(True, 21000)
>>> s.wakeup(now_ms=5000); s.run(now_ms=5000, rebalance=lambda: False), s.next_ms  # notified; not balanced: 1 s
(False, 6000)
"""

from __future__ import annotations

from collections.abc import Callable

from mqbalance._validate import duration_ms, java_long

__all__ = ["RebalanceService", "WAIT_INTERVAL_MS", "MIN_INTERVAL_MS"]

WAIT_INTERVAL_MS = 20_000
MIN_INTERVAL_MS = 1_000


class RebalanceService:
    """The timing of one client instance's rebalances; ``next_ms`` is when the loop next runs."""

    def __init__(
        self, *, created_ms: int = 0, wait_interval_ms: int = WAIT_INTERVAL_MS, min_interval_ms: int | None = None
    ) -> None:
        # NaN passes every `<= 0` test and then never compares true again: checked by name.
        created_ms = java_long(created_ms, "created_ms")
        wait_interval_ms = duration_ms(wait_interval_ms, "wait_interval_ms", positive=True)
        if min_interval_ms is not None:
            min_interval_ms = duration_ms(min_interval_ms, "min_interval_ms")
        self.wait_interval_ms = wait_interval_ms
        self.min_interval_ms = min_interval_ms
        self.last_rebalance_ms = created_ms
        self.next_ms = created_ms + wait_interval_ms
        self.rebalances = 0

    def wakeup(self, *, now_ms: int) -> None:
        """``rebalanceImmediately()``: the current wait ends now."""
        self.next_ms = min(self.next_ms, now_ms)

    def run(self, *, now_ms: int, rebalance: Callable[[], bool]) -> bool | None:
        """The loop body once its wait has ended (``now_ms >= next_ms``): rebalance (returns its
        ``balanced``) or, under the 5.x minimum interval, only wait longer (returns ``None``)."""
        if self.min_interval_ms is not None and now_ms - self.last_rebalance_ms < self.min_interval_ms:
            self.next_ms = self.last_rebalance_ms + self.min_interval_ms
            return None
        balanced = rebalance()
        self.rebalances += 1
        self.last_rebalance_ms = now_ms
        if self.min_interval_ms is not None and not balanced:
            self.next_ms = now_ms + self.min_interval_ms
        else:
            self.next_ms = now_ms + self.wait_interval_ms
        return balanced
