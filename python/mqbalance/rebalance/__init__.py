"""The living system around allocation (issue #6, in progress): broker-side group membership
(:mod:`.broker`), the client's ``RebalanceImpl`` (:mod:`.client`) and an in-memory broker to wire
them (:mod:`.memory`). ``RebalanceService`` timing (20 s periodic, wake-ups) and the simulator are
not here yet."""

from .broker import (
    ClientChannelInfo,
    ConsumerGroupEvent,
    ConsumerGroupInfo,
    ConsumerManager,
    Event,
    SubscriptionData,
)
from .client import Broker, ConsumeFromWhere, OffsetStore, ProcessQueue, PullRequest, RebalanceImpl
from .memory import InMemoryBroker

__all__ = [
    "ClientChannelInfo", "ConsumerGroupEvent", "ConsumerGroupInfo", "ConsumerManager", "Event", "SubscriptionData",
    "Broker", "ConsumeFromWhere", "OffsetStore", "ProcessQueue", "PullRequest", "RebalanceImpl", "InMemoryBroker",
]
