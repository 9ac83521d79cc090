"""Which messages of one queue have been consumed — the duplicate and loss accounting of the
simulator, by message id (a queue's offsets) without storing one entry per message: a sorted list
of disjoint ``[start, end)`` ranges, which stays one range long while consumption is orderly.

>>> c = Coverage()
>>> c.add(0, 100), c.add(100, 150)     # two owners in turn, no overlap
(0, 0)
>>> c.add(120, 180)                    # a new owner restarts from an older committed offset
30
>>> c.count, c.covered_below(200), c.ranges()
(180, 180, [(0, 180)])
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

__all__ = ["Coverage"]


class Coverage:
    __slots__ = ("starts", "ends", "count")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.count = 0  # distinct offsets consumed

    def add(self, start: int, end: int) -> int:
        """Mark ``[start, end)`` consumed; returns how many of them already were (duplicates)."""
        if end <= start:
            return 0
        starts, ends = self.starts, self.ends
        if not ends or start > ends[-1]:
            starts.append(start)
            ends.append(end)
            self.count += end - start
            return 0
        if start == ends[-1]:
            ends[-1] = end
            self.count += end - start
            return 0
        lo = bisect_left(ends, start)  # first range ending at or after start (touching counts)
        hi = bisect_right(starts, end)  # ranges starting at or before end
        overlap = sum(max(0, min(end, ends[k]) - max(start, starts[k])) for k in range(lo, hi))
        if lo < hi:
            new_start, new_end = min(start, starts[lo]), max(end, ends[hi - 1])
        else:
            new_start, new_end = start, end
        starts[lo:hi] = [new_start]
        ends[lo:hi] = [new_end]
        self.count += (end - start) - overlap
        return overlap

    def covered_below(self, offset: int) -> int:
        """How many offsets in ``[0, offset)`` were consumed."""
        total = 0
        for s, e in zip(self.starts, self.ends):
            if s >= offset:
                break
            total += min(e, offset) - s
        return total

    def ranges(self) -> list[tuple[int, int]]:
        return list(zip(self.starts, self.ends))
