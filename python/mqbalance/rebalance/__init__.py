"""The living system around allocation, as state machines over injected time and transport:
broker-side group membership (:mod:`.broker`), the client's ``RebalanceImpl`` (:mod:`.client`,
what a rebalance does), ``RebalanceService`` (:mod:`.service`, when), a whole push consumer with
its scheduled heartbeats, offset persistence and route polling (:mod:`.consumer`), and an
in-memory broker to wire them (:mod:`.memory`). :mod:`mqbalance.sim` runs them as a cluster."""

from mqbalance.rebalance.broker import (
    ClientChannelInfo,
    ClientIdListing,
    ConsumerGroupEvent,
    ConsumerGroupInfo,
    ConsumerManager,
    Event,
    SubscriptionData,
)
from mqbalance.rebalance.client import Broker, ConsumeFromWhere, OffsetStore, ProcessQueue, PullRequest, RebalanceImpl
from mqbalance.rebalance.consumer import ConsumerState, PushConsumer, Transport
from mqbalance.rebalance.memory import InMemoryBroker
from mqbalance.rebalance.service import RebalanceService

__all__ = [
    "ClientChannelInfo",
    "ClientIdListing",
    "ConsumerGroupEvent",
    "ConsumerGroupInfo",
    "ConsumerManager",
    "Event",
    "SubscriptionData",
    "Broker",
    "ConsumeFromWhere",
    "OffsetStore",
    "ProcessQueue",
    "PullRequest",
    "RebalanceImpl",
    "InMemoryBroker",
    "ConsumerState",
    "PushConsumer",
    "Transport",
    "RebalanceService",
]
