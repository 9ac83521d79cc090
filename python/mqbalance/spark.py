"""Moved to :mod:`mqbalance.fleet.spark`; this name keeps old imports working."""

import warnings

from mqbalance.fleet.spark import assign_fleet, local_session, session, stop_session

__all__ = ["assign_fleet", "local_session", "session", "stop_session"]

warnings.warn("mqbalance.spark is now mqbalance.fleet.spark", DeprecationWarning, stacklevel=2)
