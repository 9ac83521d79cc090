"""Time to drain in an audit: per (group, topic), how long until the lag reaches zero at the rates
between two snapshots of one cluster — the one audited and an earlier one (``--previous``).

A reading is ``(ms, committed, max offset)`` of one queue or partition (each kind makes its own:
:func:`mqbalance.fleet.rocketmq.lag_time.offset_readings`,
:meth:`mqbalance.fleet.kafka.snapshot.KafkaSnapshot.offset_readings`). Per queue, the estimator of
:mod:`mqbalance.history.drain` over the two readings (the consumption rate against the production
rate); a topic drains when its last queue does (:func:`~mqbalance.history.drain.group_drain`).
States: ``draining`` (with the seconds), ``never`` (production keeps up with consumption),
``idle`` (no lag), ``unknown`` — a lagging queue without an earlier reading, or a single snapshot:
one reading has no rates, and none are invented.

>>> now = {("g", "t", 0): (10_000, 500, 1_100), ("g", "t", 1): (10_000, 7, 7)}
>>> before = {("g", "t", 0): (0, 0, 1_000)}
>>> pair_drains(now, before)[("g", "t")]
Drain(state='draining', seconds=15.0, basis='rates over 10.0 s between the snapshots')
>>> pair_drains(now, None)[("g", "t")].said()
'unknown (one reading)'
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from mqbalance.fleet.findings import AuditResult, FindingKind
from mqbalance.history.drain import DRAINING, IDLE, NEVER, UNKNOWN, group_drain, time_to_drain

__all__ = ["Drain", "Reading", "Unit", "pair_drains", "with_drain"]

#: ``(ms, committed offset, max offset)`` of one queue or partition at one read
Reading = tuple[int, int, int]
#: ``(group, topic, queue or partition)``: what a reading is of
Unit = tuple[str, str, Hashable]

#: the basis of a single snapshot's estimate
ONE_READING = "one reading"


@dataclass(frozen=True, slots=True)
class Drain:
    """One (group, topic)'s time to drain: ``state`` (``draining``, ``never``, ``idle`` or
    ``unknown``), ``seconds`` (``draining``: from the later reading; ``idle``: 0) and the
    ``basis`` it stands on, for people."""

    state: str
    seconds: float | None
    basis: str

    def said(self) -> str:
        """For people: ``"62.0 s"``, ``"never"``, ``"idle"``, ``"unknown (one reading)"``."""
        if self.state == DRAINING and self.seconds is not None:
            return f"{self.seconds:,.1f} s"
        return f"unknown ({self.basis})" if self.state == UNKNOWN else self.state


def pair_drains(
    current: Mapping[Unit, Reading], previous: Mapping[Unit, Reading] | None
) -> dict[tuple[str, str], Drain]:
    """Per (group, topic) with readings in ``current``: its :class:`Drain` at the rates between
    ``previous`` (``None``: a single snapshot) and ``current``."""
    per_pair: dict[tuple[str, str], list[tuple[str, float | None]]] = defaultdict(list)
    spans: dict[tuple[str, str], float] = {}
    missing: dict[tuple[str, str], int] = defaultdict(int)
    for unit, now in current.items():
        pair = (unit[0], unit[1])
        if now[2] - now[1] <= 0:
            per_pair[pair].append((IDLE, 0.0))
            continue
        before = None if previous is None else previous.get(unit)
        if before is None or before[0] >= now[0]:
            missing[pair] += 1
            per_pair[pair].append((UNKNOWN, None))
            continue
        per_pair[pair].append(time_to_drain([before, now]))
        spans[pair] = max(spans.get(pair, 0.0), (now[0] - before[0]) / 1000)
    out = {}
    for pair, queues in sorted(per_pair.items()):
        state, seconds = group_drain(queues)
        if state == IDLE:
            basis = "no lag"
        elif previous is None:
            basis = ONE_READING
        elif state == UNKNOWN:
            basis = f"no earlier reading of {missing[pair]} lagging queue(s)"
        else:
            basis = f"rates over {spans[pair]:,.1f} s between the snapshots"
        out[pair] = Drain(state, seconds, basis)
    return out


def with_drain(result: AuditResult, drains: Mapping[tuple[str, str], Drain]) -> AuditResult:
    """``result`` with each row's time to drain (``drain``, ``drain_s``, ``drain_basis``) and its
    lag finding saying it."""
    rows = []
    for row in result.rows:
        d = drains.get((row.group, row.topic))
        rows.append(
            row if d is None else dataclasses.replace(row, drain=d.state, drain_s=d.seconds, drain_basis=d.basis)
        )
    for f in result.findings:
        d = drains.get((f.group, f.topic or ""))
        if f.kind is FindingKind.LAG and d is not None and d.state != IDLE:
            f.detail += f"; time to drain: {d.said()}" + (f" ({d.basis})" if d.state in (DRAINING, NEVER) else "")
    return dataclasses.replace(result, rows=rows)
