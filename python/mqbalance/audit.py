"""Moved to :mod:`mqbalance.fleet` (:mod:`~mqbalance.fleet.findings`, :mod:`~mqbalance.fleet.report`,
:func:`mqbalance.fleet.spark.audit`); this name keeps old imports working."""

import warnings
from typing import Any

from mqbalance.fleet.findings import FINDING_KINDS, AuditResult
from mqbalance.fleet.report import write_outputs
from mqbalance.fleet.snapshot import Snapshot

__all__ = ["FINDING_KINDS", "AuditResult", "audit", "write_outputs"]

warnings.warn("mqbalance.audit is now mqbalance.fleet", DeprecationWarning, stacklevel=2)


def audit(spark: Any, snapshot: Snapshot, assignments: Any, *, previous: Any = None) -> AuditResult:
    """The old signature of :func:`mqbalance.fleet.spark.audit` (``spark`` was never used)."""
    from mqbalance.fleet.spark import audit as spark_audit

    return spark_audit(snapshot, assignments, previous=previous)
