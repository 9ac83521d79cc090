"""Fleets of consumer groups, RocketMQ or Kafka: snapshots of them, who consumes every queue or
partition, and what is wrong with that — one interface for both kinds.

One call per step, whatever the kind (the snapshot says which it is):

* :func:`load_any_snapshot` — a RocketMQ snapshot (JSON file or Parquet directory) or a Kafka
  one (a JSON file marked ``"kind": "kafka"``);
* :func:`audit` — the audit in-process: rows, :class:`Finding` s and :class:`Totals`;
  :func:`audit_on_spark` — the same in Spark's executors; both with the time to drain of each
  (group, topic) at the rates since a previous snapshot (:func:`drains`, :mod:`~mqbalance.fleet.drain`);
* :func:`what_if_for` — the candidate strategies (RocketMQ) or assignors (Kafka) of a
  ``--what-if`` option for a snapshot;
* :func:`write_outputs` — the report (JSON, CSV, Markdown, HTML, plots) of either kind;
  :func:`assignment_table` — the per-(group, topic) table ``mqbalance assign`` prints;
* :func:`describe`, :func:`unit_count`, :func:`audits_on_spark`, :func:`assignments_on_spark`,
  :func:`write_snapshot`, :func:`read_summary` — what a command needs to say and do the same way
  for both kinds.

The modules, bottom to top: each imports only modules to its left, and nothing calls back up
(each kind's subpackage is layered inside too, see its docs)::

    findings, shipping  <  spark, drain  <  rocketmq, kafka  <  report  <  mqbalance.fleet

* :class:`~mqbalance.exceptions.SnapshotError` — for both kinds;
* :mod:`~mqbalance.fleet.findings` — the rules written once for both kinds: per-pair rows,
  findings (unowned, double-owned, idle, churn, lag, missing routes, mismatched strategies) and
  totals, in each kind's words;
* :mod:`mqbalance.fleet.rocketmq` — RocketMQ's snapshot model, readers, live reader, assignment
  engine, facts and Spark job;
* :mod:`mqbalance.fleet.kafka` — Kafka's snapshot model, live reader, facts and what-if, Spark job;
* :mod:`~mqbalance.fleet.drain` — time to drain between two snapshots, for either kind;
* :mod:`~mqbalance.fleet.report` — JSON/CSV/Markdown/HTML outputs and plots;
* :mod:`~mqbalance.fleet.spark` — Spark sessions (imported on demand), and
  :mod:`~mqbalance.fleet.shipping` — this Python environment shipped to the executors.

>>> snap = snapshot_from_dict(example_fleet(7, groups=12), "example")
>>> result = audit(snap)
>>> sorted({f.group for f in result.findings if f.kind is FindingKind.DUPLICATE_CLIENT_ID})
['cg-payments-dup']
"""

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from mqbalance.allocation.registry import StrategySpec
from mqbalance.exceptions import SnapshotError
from mqbalance.fleet.drain import Drain, pair_drains, with_drain
from mqbalance.fleet.findings import (
    FINDING_KINDS,
    AssignmentTable,
    AuditResult,
    Finding,
    FindingKind,
    PairLine,
    PairRow,
    Totals,
    WhatIfRow,
)
from mqbalance.fleet.kafka import audit as kafka_audit
from mqbalance.fleet.kafka import snapshot as kafka_snapshot
from mqbalance.fleet.kafka.audit import KAFKA_WHAT_IF, audit_kafka, kafka_what_if_candidates
from mqbalance.fleet.kafka.snapshot import KafkaSnapshot, load_kafka_snapshot, snapshot_kind
from mqbalance.fleet.kafka.spark import audit_kafka_on_spark
from mqbalance.fleet.report import write_outputs
from mqbalance.fleet.rocketmq import audit as rocketmq_audit
from mqbalance.fleet.rocketmq import live as rocketmq_live
from mqbalance.fleet.rocketmq.assignment import assign_snapshot
from mqbalance.fleet.rocketmq.audit import audit_snapshot, summarise
from mqbalance.fleet.rocketmq.example import HAZARD_GROUPS, example_fleet, example_pair, scaled_fleet
from mqbalance.fleet.rocketmq.files import load_snapshot, write_parquet
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
from mqbalance.fleet.rocketmq.lag_time import offset_readings
from mqbalance.fleet.rocketmq.snapshot import Connection, ConsumerGroup, MessageModel, Snapshot
from mqbalance.fleet.rocketmq.spark import assign_fleet, audit_fleet
from mqbalance.fleet.rocketmq.what_if import DEFAULT_WHAT_IF, what_if_candidates

__all__ = [
    "DEFAULT_WHAT_IF",
    "FINDING_KINDS",
    "HAZARD_GROUPS",
    "KAFKA_WHAT_IF",
    "WHAT_IF_DEFAULT_MAX_QUEUES",
    "AnySnapshot",
    "AssignmentTable",
    "AuditResult",
    "Connection",
    "ConsumerGroup",
    "Drain",
    "Finding",
    "FindingKind",
    "KafkaSnapshot",
    "MessageModel",
    "PairLine",
    "PairRow",
    "Snapshot",
    "SnapshotError",
    "Totals",
    "WhatIfRow",
    "assign_snapshot",
    "assignment_table",
    "assignments_on_spark",
    "audit",
    "audit_on_spark",
    "audit_snapshot",
    "audits_on_spark",
    "check_snapshots",
    "describe",
    "drains",
    "example_fleet",
    "example_pair",
    "load_any_snapshot",
    "load_snapshot",
    "read_summary",
    "scaled_fleet",
    "snapshot_from_dict",
    "summarise",
    "unit_count",
    "what_if_candidates",
    "what_if_for",
    "write_outputs",
    "write_parquet",
    "write_snapshot",
]

#: a snapshot of either kind
AnySnapshot = Snapshot | KafkaSnapshot
#: a RocketMQ audit tries the default candidates unasked up to this many readable queues
WHAT_IF_DEFAULT_MAX_QUEUES = 100_000


def load_any_snapshot(path: str | Path) -> AnySnapshot:
    """The snapshot at ``path``, of whichever kind it is
    (:func:`mqbalance.fleet.kafka.snapshot.snapshot_kind`)."""
    if snapshot_kind(path) == "kafka":
        return load_kafka_snapshot(path)
    return load_snapshot(path)


def check_snapshots(snapshot: Any, previous: Any = None) -> None:
    """``snapshot`` is a snapshot (of either kind) and ``previous``, if given, one of the same kind;
    else a :class:`SnapshotError` naming them."""
    if not isinstance(snapshot, (Snapshot, KafkaSnapshot)):
        raise SnapshotError(f"an audit needs a snapshot (see load_any_snapshot), got {snapshot!r}"[:200], snapshot)
    if previous is not None and type(previous) is not type(snapshot):
        shown = repr(getattr(previous, "source", previous))[:200]
        raise SnapshotError(f"previous: {shown} is not a snapshot of the same kind as {snapshot.source}", previous)


def what_if_for(snapshot: AnySnapshot, option: str | None) -> tuple[Any, ...]:
    """The candidates of a comma-separated ``--what-if`` for ``snapshot``'s kind: strategy specs
    (RocketMQ, :func:`what_if_candidates`) or assignor names (Kafka,
    :func:`~mqbalance.fleet.kafka.audit.kafka_what_if_candidates`); ``"none"``: none; ``None``: the
    kind's defaults (:data:`DEFAULT_WHAT_IF` on RocketMQ fleets of up to
    :data:`WHAT_IF_DEFAULT_MAX_QUEUES` readable queues, none above; :data:`KAFKA_WHAT_IF`)."""
    check_snapshots(snapshot, None)
    if option is not None and not isinstance(option, str):
        raise SnapshotError(f"--what-if: expected a comma-separated str or None, got {option!r}"[:200], option)
    if option is not None and option.strip().lower() == "none":
        return ()
    if isinstance(snapshot, KafkaSnapshot):
        return KAFKA_WHAT_IF if option is None else kafka_what_if_candidates(option)
    if option is None:
        if snapshot.readable_queue_count() > WHAT_IF_DEFAULT_MAX_QUEUES:
            return ()
        option = ",".join(DEFAULT_WHAT_IF)
    return what_if_candidates(option)


def audit(
    snapshot: AnySnapshot,
    *,
    previous: AnySnapshot | None = None,
    what_if: Iterable[StrategySpec | str] | str = (),
    progress: Callable[[int, int], None] | None = None,
) -> AuditResult:
    """The audit of a snapshot of either kind, in-process: ``previous`` (of the same kind) for
    churn, ``what_if`` candidates (:func:`what_if_for`), ``progress(done, total)`` as RocketMQ
    queues are assigned (a Kafka snapshot carries its assignment)."""
    check_snapshots(snapshot, previous)
    if isinstance(snapshot, KafkaSnapshot):
        result = audit_kafka(snapshot, previous, what_if)  # type: ignore[arg-type]  # it checks the names
    else:
        result = audit_snapshot(snapshot, what_if=what_if, previous=previous, progress=progress)  # type: ignore[arg-type]
    return with_drain(result, drains(snapshot, previous))


def _readings(snapshot: AnySnapshot) -> dict[Any, tuple[int, int, int]]:
    if isinstance(snapshot, KafkaSnapshot):
        return snapshot.offset_readings()
    return offset_readings(snapshot.lag_times, snapshot.offsets, snapshot.errors)


def drains(snapshot: AnySnapshot, previous: AnySnapshot | None = None) -> dict[tuple[str, str], Drain]:
    """Per (group, topic) whose offsets ``snapshot`` read (a live snapshot's lag-seconds read:
    committed and max offsets at one time), its time to drain at the rates since ``previous``, an
    earlier snapshot of the same cluster (:func:`mqbalance.fleet.drain.pair_drains`; without it,
    ``unknown`` for a lagging pair: one reading has no rates).

    >>> snap = snapshot_from_dict(example_fleet(7, groups=12), "example")
    >>> drains(snap)  # a file without offsets read: nothing to say
    {}
    """
    check_snapshots(snapshot, previous)
    return pair_drains(_readings(snapshot), None if previous is None else _readings(previous))


def audit_on_spark(
    spark: Any,
    snapshot: AnySnapshot,
    *,
    previous: AnySnapshot | None = None,
    what_if: Iterable[StrategySpec | str] | str = (),
    partitions: int | None = None,
    assignments_dir: str | Path | None = None,
) -> AuditResult:
    """:func:`audit` in Spark's executors (a classic session or Spark Connect, see
    :func:`mqbalance.fleet.spark.session`): RocketMQ pairs assigned and counted by
    :func:`mqbalance.fleet.rocketmq.spark.audit_fleet` (the assignment rows written to
    ``assignments_dir`` as the tasks compute them, if given), Kafka groups dealt over the tasks by
    :func:`mqbalance.fleet.kafka.spark.audit_kafka_on_spark`. Equal to :func:`audit`."""
    check_snapshots(snapshot, previous)
    if isinstance(snapshot, KafkaSnapshot):
        result = audit_kafka_on_spark(spark, snapshot, previous, what_if, partitions=partitions)  # type: ignore[arg-type]
    else:
        result = audit_fleet(
            spark,
            snapshot,
            partitions=partitions,
            previous=previous,  # type: ignore[arg-type]
            what_if=what_if,
            assignments_dir=assignments_dir,
        )
    return with_drain(result, drains(snapshot, previous))


def describe(snapshot: AnySnapshot) -> str:
    """The snapshot's size, for people: groups and readable queues, or groups and partitions."""
    check_snapshots(snapshot, None)
    if isinstance(snapshot, KafkaSnapshot):
        return kafka_audit.describe(snapshot)
    return rocketmq_audit.describe(snapshot)


def unit_count(snapshot: AnySnapshot) -> int:
    """What the fleet assigns: its readable queues, or its partitions."""
    check_snapshots(snapshot, None)
    if isinstance(snapshot, KafkaSnapshot):
        return snapshot.partition_count()
    return snapshot.readable_queue_count()


def assignment_table(snapshot: AnySnapshot, result: AuditResult) -> AssignmentTable:
    """The per-(group, topic) table of ``mqbalance assign`` for ``result``, the audit of ``snapshot``."""
    check_snapshots(snapshot, None)
    if isinstance(snapshot, KafkaSnapshot):
        return kafka_audit.assignment_table(snapshot, result)
    return rocketmq_audit.assignment_table(snapshot, result)


def audits_on_spark(snapshot: AnySnapshot) -> bool:
    """Whether an audit of ``snapshot`` runs on Spark unless told otherwise: a RocketMQ audit
    assigns every queue (Spark's job, local mode by default); a Kafka snapshot carries its
    assignment, audited in-process unless a Spark target is named."""
    check_snapshots(snapshot, None)
    return not isinstance(snapshot, KafkaSnapshot)


def assignments_on_spark(spark: Any, snapshot: AnySnapshot, *, partitions: int | None = None) -> Any:
    """A Spark DataFrame of the fleet's assignment, one row per queue and consuming process
    (:func:`mqbalance.fleet.rocketmq.spark.assign_fleet`); ``None`` for a Kafka snapshot, which
    carries its assignment."""
    check_snapshots(snapshot, None)
    if isinstance(snapshot, KafkaSnapshot):
        return None
    return assign_fleet(spark, snapshot, partitions=partitions)


def write_snapshot(data: Mapping[str, Any], snapshot: AnySnapshot, out: str | Path) -> Path:
    """A snapshot read live written to ``out``: the read ``data`` as JSON for a ``.json`` path,
    else the Parquet layout of ``snapshot`` (RocketMQ only: a Kafka snapshot is a JSON file)."""
    check_snapshots(snapshot, None)
    path = Path(out)
    if path.suffix.lower() == ".json":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return path
    if isinstance(snapshot, KafkaSnapshot):
        raise SnapshotError(f"-o {path}: a Kafka snapshot is written as JSON (-o fleet.json)", str(path))
    return write_parquet(snapshot, path)


def read_summary(data: Mapping[str, Any], snapshot: AnySnapshot) -> str:
    """What a live read holds, for people (``data`` as read, ``snapshot`` of it)."""
    check_snapshots(snapshot, None)
    if isinstance(snapshot, KafkaSnapshot):
        return kafka_snapshot.read_summary(data, snapshot)
    return rocketmq_live.read_summary(dict(data), snapshot)
