"""Moved to :mod:`mqbalance.fleet.snapshot`; this name keeps old imports working."""

import warnings

from mqbalance.fleet.snapshot import (
    PERM_READ,
    Snapshot,
    SnapshotError,
    load_snapshot,
    snapshot_from_dict,
    write_parquet,
)

__all__ = ["PERM_READ", "Snapshot", "SnapshotError", "load_snapshot", "snapshot_from_dict", "write_parquet"]

warnings.warn("mqbalance.snapshot is now mqbalance.fleet.snapshot", DeprecationWarning, stacklevel=2)
