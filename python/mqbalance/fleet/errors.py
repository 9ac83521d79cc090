"""The fleet's one error: a snapshot (of either kind) that cannot be used."""

from __future__ import annotations

from mqbalance.exceptions import MQBalanceError

__all__ = ["SnapshotError"]


class SnapshotError(MQBalanceError, ValueError):
    """A snapshot that cannot be used; the message names the file and the field."""
