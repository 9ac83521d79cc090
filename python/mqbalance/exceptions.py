"""Exceptions raised by mqbalance.

Every error is an :class:`MQBalanceError`. Errors about values the caller passed also subclass
:class:`ValueError` (and carry the offending value as ``.value``); failed look-ups subclass
:class:`LookupError`. Errors that mirror a Java ``IllegalArgumentException`` keep Java's message
text (``.java_message``), so logs from Python and Java clients read alike.

These classes live in Python (not in the extension), so they have docstrings, pickle, and import
without the compiled module.

>>> from mqbalance import strategy
>>> try:
...     strategy("AVG").allocate("cg", "c1", [], ["c1"])
... except EmptyQueuesError as e:
...     print(e.java_message)
mqAll is null or mqAll empty
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "MQBalanceError",
    "InvalidInputError",
    "IllegalArgumentError",
    "EmptyCurrentIdError",
    "EmptyQueuesError",
    "EmptyConsumersError",
    "VirtualNodeCountError",
    "MachineRoomError",
    "ConsumerIdcsNotSetError",
    "RingTooLargeError",
    "InvalidQueueError",
    "InvalidClientIdError",
    "LengthMismatchError",
    "UnsupportedStrategyError",
    "UnknownStrategyError",
    "UnknownCharsetError",
    "InvalidLatencyError",
    "LatencyTableError",
    "EmptyRouteError",
    "UnknownBrokerError",
    "InvalidSimulationError",
    "ResourceLimitError",
    "InvalidEpsilonError",
    "EpsilonTooSmallError",
    "PreviousAssignmentRequiredError",
    "InvalidPreviousAssignmentError",
    "PreviousAssignmentWarning",
    "RemotingError",
    "RemotingConnectError",
    "RemotingTimeoutError",
    "RemotingFrameError",
    "KafkaWireError",
    "BrokerResponseError",
    "AuthenticationFailedError",
    "TlsHandshakeError",
    "ClientConfigError",
    "PartitionAssignorError",
    "ColumnError",
    "HistoryError",
    "StrategyConfigError",
    "SchemaError",
    "ScenarioError",
    "SnapshotError",
    "ExecutorEnvironmentError",
    "SparkMemoryError",
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
    "UsageError",
]


class MQBalanceError(Exception):
    """Root of every mqbalance error. ``.value`` is the offending value, when there is one."""

    def __init__(self, message: str, value: Any = None) -> None:
        super().__init__(message, value)
        self.message = message
        self.value = value

    def __str__(self) -> str:
        return self.message


class InvalidInputError(MQBalanceError, ValueError):
    """A value passed by the caller is not acceptable."""


class IllegalArgumentError(InvalidInputError):
    """What the Java client throws as ``IllegalArgumentException``; the message is Java's."""

    java_exception = "IllegalArgumentException"

    @property
    def java_message(self) -> str:
        return self.message


class EmptyCurrentIdError(IllegalArgumentError):
    """``currentCID is empty``: the current client id is ``None`` or ``""``."""


class EmptyQueuesError(IllegalArgumentError):
    """``mqAll is null or mqAll empty``."""


class EmptyConsumersError(IllegalArgumentError):
    """``cidAll is null or cidAll empty``."""


class VirtualNodeCountError(IllegalArgumentError):
    """``illegal virtualNodeCnt :<n>``: a negative CONSISTENT_HASH virtual node count."""


class MachineRoomError(IllegalArgumentError):
    """``Machine room is null for mq …`` / ``… for consumer id …``: the resolver gave no room."""


class ConsumerIdcsNotSetError(InvalidInputError):
    """MACHINE_ROOM met an ``idc@broker`` name but ``consumer_idcs`` was never set.

    Java throws ``NullPointerException`` there; ``.value`` is the broker name.
    """

    java_exception = "NullPointerException"


class RingTooLargeError(InvalidInputError):
    """The consistent-hash ring would exceed ``consumers × virtual_node_cnt`` = 2**24 nodes."""


class InvalidQueueError(InvalidInputError):
    """A queue field is not acceptable: a non-string topic or broker name, a string with a lone
    surrogate, or a queue id outside Java's ``int`` range."""


class InvalidClientIdError(InvalidInputError):
    """A client id is not a string, or holds a lone surrogate."""


class LengthMismatchError(InvalidInputError):
    """Columns that must be aligned have different lengths."""


class UnsupportedStrategyError(InvalidInputError):
    """A strategy cannot be used in this call (e.g. CONFIG in bulk assignment)."""


class UnknownStrategyError(MQBalanceError, LookupError):
    """No strategy of that name."""


class UnknownCharsetError(MQBalanceError, LookupError):
    """The consistent-hash charset is not one of UTF-8, ISO-8859-1, US-ASCII."""


class InvalidLatencyError(InvalidInputError):
    """A send latency that is negative, NaN or not an integer number of milliseconds."""


class LatencyTableError(InvalidInputError):
    """Custom ``latency_max`` / ``not_available_duration`` tables of unequal length, not
    ascending, or with negative entries."""


class EmptyRouteError(InvalidInputError):
    """A topic route with no writable queue: nothing can be sent."""


class UnknownBrokerError(MQBalanceError, LookupError):
    """A broker that is not in the topic's route (simulation models)."""


class InvalidSimulationError(InvalidInputError):
    """A batch-simulation parameter out of range."""


class ResourceLimitError(InvalidInputError):
    """A count too large to compute: beyond what the reference allows (Java's ``int``, Kafka's
    limits), or whose result would need more memory than the budget (``MQBALANCE_MEMORY_BUDGET``
    bytes; default half the machine's memory or ``ulimit -v``). Checked before allocating; the
    message names the parameter, its value and the memory it would need."""


class InvalidEpsilonError(InvalidInputError):
    """CONSISTENT_HASH_BOUNDED's ``epsilon`` is not a finite number (NaN, ±inf, or not a number)."""


class EpsilonTooSmallError(InvalidEpsilonError):
    """CONSISTENT_HASH_BOUNDED's ``epsilon`` is negative: for some group sizes the cap
    ``ceil((1 + epsilon) * queues / consumers)`` would be below the average load and some queue
    could not be placed. ``.minimum`` is the smallest accepted value (0: cap = ceil(average))."""

    minimum = 0.0


class PreviousAssignmentRequiredError(UnsupportedStrategyError):
    """STICKY was asked without the group's previous assignment — a per-client ``allocate``, a
    fleet snapshot, a scenario, or ``assign`` / ``bulk.owners`` without ``previous=``. The message
    names the alternatives: the whole group with ``previous=`` (``previous={}`` for a first run),
    or CONSISTENT_HASH_BOUNDED, which every client computes for itself."""


class InvalidPreviousAssignmentError(InvalidInputError):
    """A previous assignment that cannot be used: a queue owned twice, not a mapping of client
    id to queues, or one sharing no queue with the current list (another group's or topic's)."""


class PreviousAssignmentWarning(UserWarning):
    """A previous assignment names consumers or queues that are not in the current lists; they
    are ignored (a consumer that left, a queue that went away) and named in the message."""


class RemotingError(MQBalanceError):
    """Talking to a RocketMQ name server or broker failed. ``.addr`` is its ``host:port``
    (also ``.value``); the message names it."""

    @property
    def addr(self) -> str | None:
        return self.value if isinstance(self.value, str) else None


class RemotingConnectError(RemotingError):
    """No connection: refused, unreachable, not established within the timeout, or dropped by the
    server before it answered."""


class AuthenticationFailedError(RemotingError):
    """The server refused the client's credentials (a Kafka broker: SASL authentication failed —
    a wrong user name or password, or a mechanism the listener does not enable). The message
    names the server and the mechanism, never the secret."""


class TlsHandshakeError(RemotingConnectError):
    """The TLS handshake with the server failed: its certificate is not trusted by the given CA,
    does not match the host name, or the server wanted a client certificate. The message says
    which, from the TLS library's verdict."""


class RemotingTimeoutError(RemotingError):
    """The server accepted the request but sent no answer within the request's timeout."""


class RemotingFrameError(RemotingError):
    """The server sent bytes that are not a remoting frame: a declared length that is negative or
    beyond the frame limit (refused before anything is allocated), a header that is not JSON, a
    connection closed in the middle of a frame."""


class KafkaWireError(MQBalanceError, ValueError):
    """Bytes that are not the Kafka answer they were read as: truncated inside a field, a length
    beyond the bytes left, a null where none is allowed, a string that is not UTF-8, bytes after
    the last field, or a version not decoded here. The message names the field and the byte
    offset; ``.value`` is the offset (the version, for an unsupported one)."""


class BrokerResponseError(RemotingError):
    """The server answered with a code other than ``SUCCESS``. ``.value`` is
    ``(addr, request_code, code, remark)``; ``.code`` and ``.remark`` are what the server sent,
    and the message names both (and the request)."""

    @property
    def addr(self) -> str | None:
        return str(self.value[0]) if isinstance(self.value, tuple) else None

    @property
    def request_code(self) -> int | None:
        return int(self.value[1]) if isinstance(self.value, tuple) else None

    @property
    def code(self) -> int | None:
        return int(self.value[2]) if isinstance(self.value, tuple) else None

    @property
    def remark(self) -> str | None:
        return self.value[3] if isinstance(self.value, tuple) else None


class PartitionAssignorError(MQBalanceError):
    """A broker-side (KIP-848) assignor refused the group, as Kafka's
    ``PartitionAssignorException`` does; the message is Java's (e.g. a subscribed topic missing
    from the topic metadata)."""

    java_exception = "PartitionAssignorException"

    @property
    def java_message(self) -> str:
        return self.message


class ColumnError(InvalidInputError):
    """A DataFrame column (:mod:`mqbalance.spark`) that is missing, has the wrong type, holds
    nulls or duplicated queues; ``value`` is the column's name."""


class HistoryError(InvalidInputError):
    """A history directory (:mod:`mqbalance.history`) that is not ours, has a newer schema
    version, or cannot be written; ``value`` is the path or the version."""


# Configuration files and parameters (the strategy registry, scenarios, snapshots).


class StrategyConfigError(InvalidInputError):
    """A strategy configuration that names no strategy or carries bad parameters; the message
    says where (``where``) and the value."""


class SchemaError(MQBalanceError, ValueError):
    """A value that does not fit its schema: ``"<path>: <problem>"``; ``.path`` and ``.value``."""

    def __init__(self, path: str, problem: str, value: Any = None) -> None:
        super().__init__(f"{path}: {problem}", value)
        self.path = path
        self.problem = problem


class ScenarioError(MQBalanceError, ValueError):
    """A scenario that cannot be run; the message names the file and the field path, ``.path``
    is that path and ``.value`` the bad value (when there is one)."""

    def __init__(self, message: str, value: Any = None, *, path: str = "") -> None:
        super().__init__(message, value)
        self.path = path


class SnapshotError(MQBalanceError, ValueError):
    """A snapshot that cannot be used; the message names the file and the field."""


# Spark (mqbalance.fleet.shipping).


class ExecutorEnvironmentError(MQBalanceError):
    """The executors' Python cannot run mqbalance (a module is missing there, or their mqbalance is
    another version than the driver's). ``module`` is the missing module's name, if known."""

    def __init__(self, message: str, module: str | None = None) -> None:
        super().__init__(message)
        self.module = module


class SparkMemoryError(MQBalanceError):
    """Spark ran out of memory; the message says which memory and the setting to raise."""


# Group coordination on ZooKeeper (mqbalance.coordination).


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


class ClientConfigError(InvalidInputError):
    """A Kafka client properties file (``--command-config``) that cannot be used: a key mqbalance's
    Kafka clients do not support, a value out of range, a key store that is not PEM, a file it
    names that cannot be read. ``.value`` is the key (never the value: it may be a secret);
    ``.path`` the properties file."""

    def __init__(self, message: str, value: Any = None, path: str | None = None) -> None:
        super().__init__(message, value)
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.value, self.path))


class UsageError(InvalidInputError):
    """A command-line argument that cannot be used (``mqbalance``'s commands: exit code 2); the
    message names the option, ``.value`` is what was given.

    >>> raise UsageError("--metrics-port: must be 1-65535, got 0", 0)
    Traceback (most recent call last):
    ...
    mqbalance.exceptions.UsageError: --metrics-port: must be 1-65535, got 0
    """
