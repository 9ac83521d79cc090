"""Check the record files of ``mqbalance zk-consume`` processes (see :mod:`.worker` for the format)
against the offsets committed in ZooKeeper:

* **no loss** — every offset below a queue's final committed offset was processed by someone;
* **no overlap** — no two members processed the same queue at overlapping times;
* **monotonic commits** — ordered by the offset node's version, committed offsets never decrease;
* duplicates (messages processed more than once: at-least-once delivery) are counted, not errors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mqbalance.record_files import load_records

__all__ = ["RecordCheck", "check_records", "load_records"]


@dataclass
class RecordCheck:
    members: int = 0
    processed: int = 0
    duplicates: int = 0
    commits: int = 0
    fenced: int = 0
    lost: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    overlaps: list[str] = field(default_factory=list)
    backwards: list[str] = field(default_factory=list)
    mismatched_final: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.overlaps or self.backwards or self.mismatched_final)

    def summary(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "members": self.members,
            "processed": self.processed,
            "duplicates": self.duplicates,
            "commits": self.commits,
            "fenced_commits": self.fenced,
            "lost": {q: gaps[:5] for q, gaps in list(self.lost.items())[:10]},
            "overlaps": self.overlaps[:10],
            "backwards": self.backwards[:10],
            "mismatched_final": self.mismatched_final[:10],
        }


def check_records(records: Mapping[str, list[dict[str, Any]]], final_offsets: Mapping[str, int]) -> RecordCheck:
    """``final_offsets``: ``{"topic/p": committed offset read from ZooKeeper at the end}``."""
    res = RecordCheck(members=len(records))
    intervals: dict[str, list[tuple[float, float, int, int, str]]] = defaultdict(list)
    commits: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for member, rows in records.items():
        for r in rows:
            e = r.get("e")
            if e == "p":
                intervals[r["q"]].append((r["t0"], r["t1"], r["a"], r["b"], member))
            elif e == "c":
                commits[r["q"]].append((r["v"], r["o"], member))
            elif e == "f":
                res.fenced += 1
    for q, ivs in intervals.items():
        ivs.sort()
        latest_end: dict[str, tuple[float, float]] = {}
        for t0, t1, _, _, m in ivs:
            for other, (o0, o1) in latest_end.items():
                if other != m and t0 < o1:
                    res.overlaps.append(f"{q}: {other} [{o0:.3f}, {o1:.3f}] overlaps {m} [{t0:.3f}, {t1:.3f}]")
            if m not in latest_end or t1 > latest_end[m][1]:
                latest_end[m] = (t0, t1)
        seen: dict[int, int] = defaultdict(int)
        for _, _, a, b, _ in ivs:
            res.processed += b - a
            for k in range(a, b):
                seen[k] += 1
        res.duplicates += sum(n - 1 for n in seen.values())
        final = final_offsets.get(q, 0)
        gaps = []
        k = 0
        while k < final:
            if k not in seen:
                start = k
                while k < final and k not in seen:
                    k += 1
                gaps.append((start, k))
            k += 1
        if gaps:
            res.lost[q] = gaps
    for q, final in final_offsets.items():
        if final > 0 and q not in intervals:
            res.lost[q] = [(0, final)]
    for q, cs in commits.items():
        cs.sort()
        res.commits += len(cs)
        for (v0, o0, m0), (v1, o1, m1) in zip(cs, cs[1:]):
            if v1 == v0 or o1 < o0:
                res.backwards.append(f"{q}: v{v0}={o0} by {m0} then v{v1}={o1} by {m1}")
        # a member killed between its commit and its log line leaves ZooKeeper ahead, never behind
        if cs and final_offsets.get(q) is not None and cs[-1][1] > final_offsets[q]:
            res.mismatched_final.append(f"{q}: last logged commit {cs[-1][1]} (v{cs[-1][0]}) > {final_offsets[q]}")
    return res
