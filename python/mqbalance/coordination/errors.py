"""Errors of :mod:`mqbalance.coordination`. All are :class:`~mqbalance.exceptions.MQBalanceError`;
errors about values the caller passed are also :class:`ValueError`, failed look-ups
:class:`LookupError`.

>>> issubclass(DuplicateClientIdError, ValueError), issubclass(NoPartitionsError, LookupError)
(True, True)
"""

from __future__ import annotations

from mqbalance.exceptions import InvalidInputError, MQBalanceError

__all__ = [
    "CoordinationError",
    "InvalidCoordinationConfigError",
    "ZooKeeperUnreachableError",
    "ZooKeeperNotFoundError",
    "DuplicateClientIdError",
    "NoPartitionsError",
    "CoordinationAuthError",
    "CommitFailedError",
    "FencedCommitError",
    "RebalanceFailedError",
]


class CoordinationError(MQBalanceError):
    """Root of the errors of group coordination on ZooKeeper."""


class InvalidCoordinationConfigError(CoordinationError, InvalidInputError):
    """A parameter out of range: a count or timeout that is zero or negative, an unknown mode, a
    malformed topic list or id. (A strategy the mode cannot run is refused by the registry:
    :class:`~mqbalance.exceptions.UnsupportedStrategyError`.)"""


class ZooKeeperUnreachableError(CoordinationError):
    """No ZooKeeper server answered within the connect timeout. ``.value`` is the host string."""


class ZooKeeperNotFoundError(CoordinationError, LookupError):
    """The ZooKeeper server jars (Debian package ``zookeeper``) are not installed."""


class DuplicateClientIdError(CoordinationError, InvalidInputError):
    """Another live session already registered this client id in the group.

    RocketMQ lets two clients share an id (and then both take the same queues while others pile
    up); here the second member refuses to start. ``.value`` is the client id."""


class NoPartitionsError(CoordinationError, LookupError):
    """A subscribed topic has no partition node ``/brokers/topics/<topic>``. ``.value`` is the topic."""


class CoordinationAuthError(CoordinationError):
    """ZooKeeper refused an operation on the group's nodes (digest ACL): pass the group's ``auth``.
    ``.value`` is the path."""


class CommitFailedError(CoordinationError):
    """An offset commit did not complete (connection loss: its outcome is unknown)."""


class FencedCommitError(CommitFailedError):
    """An offset commit refused because this member does not own the partition any more (its
    owner node is gone or another member claimed the partition since). Nothing was written.
    ``.value`` is the ``TopicPartition``."""


class RebalanceFailedError(CoordinationError):
    """Every rebalance attempt met a claim conflict (Kafka's ``ConsumerRebalanceFailedException``)."""
