"""A RocketMQ fleet: snapshots of it, who consumes every queue, and what is wrong with that.

* :mod:`~mqbalance.fleet.snapshot` — the snapshot model (JSON or Parquet in, typed views out);
* :mod:`~mqbalance.fleet.engine` — the assignment of every (group, topic), Spark-free;
* :mod:`~mqbalance.fleet.findings` — per-pair table, :class:`Finding` s and totals;
* :mod:`~mqbalance.fleet.report` — JSON/CSV/Markdown/HTML outputs and plots;
* :mod:`~mqbalance.fleet.spark` — the same at scale on Spark (imported on demand);
* :mod:`~mqbalance.fleet.example` — generated example fleets with planted hazards.

>>> snap = snapshot_from_dict(example_fleet(7, groups=12), "example")
>>> result = audit_snapshot(snap)
>>> sorted({f.group for f in result.findings if f.kind is FindingKind.DUPLICATE_CLIENT_ID})
['cg-payments-dup']
"""

from mqbalance.fleet.engine import assign_snapshot, pair_counts
from mqbalance.fleet.example import HAZARD_GROUPS, example_fleet, example_pair, scaled_fleet
from mqbalance.fleet.findings import FINDING_KINDS, AuditResult, Finding, FindingKind, PairRow, summarise
from mqbalance.fleet.report import write_outputs
from mqbalance.fleet.snapshot import (
    Connection,
    ConsumerGroup,
    MessageModel,
    Snapshot,
    SnapshotError,
    load_snapshot,
    snapshot_from_dict,
    write_parquet,
)

__all__ = [
    "FINDING_KINDS",
    "HAZARD_GROUPS",
    "AuditResult",
    "Connection",
    "ConsumerGroup",
    "Finding",
    "FindingKind",
    "MessageModel",
    "PairRow",
    "Snapshot",
    "SnapshotError",
    "assign_snapshot",
    "audit_snapshot",
    "example_fleet",
    "example_pair",
    "load_snapshot",
    "scaled_fleet",
    "snapshot_from_dict",
    "summarise",
    "write_outputs",
    "write_parquet",
]


def audit_snapshot(snapshot: Snapshot) -> AuditResult:
    """The audit of one snapshot, in-process (no Spark): :func:`assign_snapshot` then
    :func:`summarise`."""
    if not isinstance(snapshot, Snapshot):
        raise SnapshotError(f"audit_snapshot needs a Snapshot (see load_snapshot), got {snapshot!r}", snapshot)
    return summarise(snapshot, *pair_counts(assign_snapshot(snapshot)))
