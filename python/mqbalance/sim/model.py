"""What a scenario is made of: the cluster and group settings, the consumers, and a timeline of
typed events — one frozen, slotted dataclass per kind, each able to describe itself.
:mod:`.scenario` reads them from YAML/JSON; :class:`~mqbalance.sim.engine.Simulation` runs them.

>>> events = [Join(60_000, "10.0.0.9@9", 200.0), Crash(120_000, "10.0.0.2@1002", close_connection=True),
...           NotificationSwitch(180_000, enabled=False)]
>>> [e.describe() for e in events]
['join 10.0.0.9@9', 'crash 10.0.0.2@1002 (connection closed)', 'broker notification off']
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TypeAlias

from mqbalance.allocation.registry import StrategyName, StrategySpec

__all__ = [
    "TopicSpec",
    "ConsumerSpec",
    "ClientSettings",
    "BrokerSettings",
    "NetworkSettings",
    "Join",
    "Leave",
    "Crash",
    "QueueCountChange",
    "NetworkChange",
    "NotificationSwitch",
    "Partition",
    "ScenarioEvent",
    "Scenario",
]


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    queues_per_broker: int
    rate: float = 0.0  # produced messages per second, round-robin over the write queues


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    client_id: str
    throughput: float  # messages per second it can consume
    start_ms: int = 0
    startup_ms: int | None = None  # from start() to its first heartbeat; None: ``client.startup_ms``


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """The push consumer's timers (RocketMQ ``RebalanceService``, ``MQClientInstance``)."""

    rebalance_interval_ms: int = 20_000
    min_interval_ms: int | None = 1_000
    heartbeat_interval_ms: int = 30_000
    persist_interval_ms: int = 5_000
    poll_name_server_interval_ms: int = 30_000
    pull_delay_ms: int | None = None  # None: 500 ms under 5.x, 0 under 4.x
    # From start() creating the client instance (``MQClientInstance``'s constructor builds its
    # ``RebalanceService``, whose ``lastRebalanceTimestamp`` starts then, and ``startScheduledTask``
    # times the heartbeat and offset persistence from then) to its first heartbeat at the end of
    # ``DefaultMQPushConsumerImpl.start()`` (the name-server route fetch and the broker connections
    # come first). A joiner's first rebalance waits out the 1 s minimum from the creation, not from
    # its registration. 0: registered at once.
    startup_ms: int = 0
    # Every pull carries the queue's consumed offset and the broker stores it
    # (``DefaultMQPushConsumerImpl.pullMessage``: ``commitOffsetEnable`` with the in-memory offset;
    # ``PullMessageProcessor``: ``storeOffsetEnable`` → ``commitOffset``), so a queue's new owner
    # starts about where the old one is rather than at its last 5 s persistence. Off by default:
    # the simulator's duplicate figures stay the upper bound they were (offsets by persistence only).
    commit_on_pull: bool = False


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """The broker side (``ConsumerManager``, ``ClientHousekeepingService``). ``client_ids``: how
    it lists connections that share a client id — ``"per-connection"`` (Java, the default: the id
    twice, a share goes to nobody) or ``"per-client-id"`` (the Rust port: the id once, both take
    the same share); see :class:`~mqbalance.rebalance.broker.ClientIdListing`. ``notify_on_leave``:
    a consumer that unregisters (a graceful leave) or whose connection closes (a crash with
    ``close_connection``) makes the broker notify the group — Java does; the Rust port (1.0.0,
    measured) removes it without a notification, so the others catch up at their periodic rebalance."""

    notify: bool = True
    channel_expired_timeout_ms: int = 120_000
    scan_interval_ms: int = 10_000
    client_ids: str = "per-connection"
    notify_on_leave: bool = True


@dataclass(frozen=True, slots=True)
class NetworkSettings:
    """Delay and loss of oneway messages: notifications, heartbeats, offset commits, member queries.
    ``round_trip_ms``: a synchronous request's round trip — a client's per-broker loops
    (``MQClientInstance.sendHeartbeatToAllBroker``, ``unregisterClient``) send to the next broker
    once the previous one answered, so the k-th broker of the route hears it k round trips after
    the first (and the k-th notices a crashed client's closed connection as much later); 0: every
    broker at once (their consumer lists never differ)."""

    delay_ms: int = 0
    loss: float = 0.0
    round_trip_ms: int = 0


# ---- the timeline ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Event:
    """What every event has: when it happens (ms from the start) and a one-line description."""

    at_ms: int

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Join(_Event):
    """A consumer starts with ``client_id`` (which may duplicate a running one's); ``startup_ms``:
    from its start to its first heartbeat (None: ``client.startup_ms``)."""

    client_id: str
    throughput: float  # messages per second it can consume
    startup_ms: int | None = None

    def describe(self) -> str:
        return f"join {self.client_id}"


@dataclass(frozen=True, slots=True)
class Leave(_Event):
    """The newest running consumer with ``client_id`` shuts down gracefully: it persists its
    offsets and unregisters."""

    client_id: str

    def describe(self) -> str:
        return f"leave {self.client_id}"


@dataclass(frozen=True, slots=True)
class Crash(_Event):
    """The newest running consumer with ``client_id`` dies. Silent (a host failure): the broker
    expires its channel after ``channel_expired_timeout``; ``close_connection``: the broker sees the
    socket close and drops it at once."""

    client_id: str
    close_connection: bool = False

    def describe(self) -> str:
        return f"crash {self.client_id}" + (" (connection closed)" if self.close_connection else " (silent)")


@dataclass(frozen=True, slots=True)
class QueueCountChange(_Event):
    """The topic's route now has ``queues_per_broker`` queues on every broker."""

    topic: str
    queues_per_broker: int

    def describe(self) -> str:
        return f"{self.topic}: {self.queues_per_broker} queues per broker"


@dataclass(frozen=True, slots=True)
class NetworkChange(_Event):
    """From now on the network delays and drops oneway messages as ``network`` says."""

    network: NetworkSettings

    def describe(self) -> str:
        return f"network delay {self.network.delay_ms} ms, loss {self.network.loss:g}"


@dataclass(frozen=True, slots=True)
class NotificationSwitch(_Event):
    """The broker's ``notifyConsumerIdsChangedEnable`` is switched on or off."""

    enabled: bool

    def describe(self) -> str:
        return f"broker notification {'on' if self.enabled else 'off'}"


@dataclass(frozen=True, slots=True)
class Partition(_Event):
    """The newest running consumer with ``client_id`` is cut off from the broker for ``duration_ms``
    while it keeps running (both directions: nothing it sends arrives, nothing reaches it). It pulls
    nothing; its heartbeats, offset commits, member queries and the broker's notifications are lost;
    it keeps its queues. The broker expires its channel after ``channel_expired_timeout`` (noticed at
    its next scan) and the others take its queues. When the link heals it pulls its queues again from
    where it stopped (duplicates, and queues owned twice until it rebalances) and, if the broker had
    expired it, heartbeats and rebalances at once (its connection is re-established).

    >>> Partition(60_000, "10.0.0.2@1002", 30_000).describe()
    'partition 10.0.0.2@1002 from the broker for 30000 ms'
    """

    client_id: str
    duration_ms: int

    def describe(self) -> str:
        return f"partition {self.client_id} from the broker for {self.duration_ms} ms"


ScenarioEvent: TypeAlias = Join | Leave | Crash | QueueCountChange | NetworkChange | NotificationSwitch | Partition
"""Every kind of timeline event (the engine matches on it exhaustively)."""


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    source: str
    topics: tuple[TopicSpec, ...]
    consumers: tuple[ConsumerSpec, ...]
    events: tuple[ScenarioEvent, ...] = ()
    description: str = ""
    seed: int = 1
    duration_ms: int = 3_600_000
    sample_interval_ms: int = 1_000
    semantics: str = "5.x"
    brokers: tuple[str, ...] = ("broker-a", "broker-b")
    group: str = "cg"
    strategy: StrategySpec = StrategySpec(StrategyName.AVG)
    consume_from_where: str = "LAST_OFFSET"
    client: ClientSettings = field(default_factory=ClientSettings)
    broker: BrokerSettings = field(default_factory=BrokerSettings)
    network: NetworkSettings = field(default_factory=NetworkSettings)
    compare: tuple[StrategySpec, ...] = ()

    def queue_count(self) -> dict[str, int]:
        """Queues per topic at the start."""
        return {t.name: t.queues_per_broker * len(self.brokers) for t in self.topics}

    def with_strategy(self, spec: StrategySpec) -> Scenario:
        """The same scenario under another strategy."""
        return replace(self, strategy=spec, compare=())
