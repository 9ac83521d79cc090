"""The living system around allocation (issue #6, in progress): broker-side group membership
(:mod:`.broker`). The client-side ``RebalanceImpl`` / ``RebalanceService`` state machines and the
simulator are not here yet."""

from .broker import (
    ClientChannelInfo,
    ConsumerGroupEvent,
    ConsumerGroupInfo,
    ConsumerManager,
    Event,
    SubscriptionData,
)

__all__ = ["ClientChannelInfo", "ConsumerGroupEvent", "ConsumerGroupInfo", "ConsumerManager", "Event", "SubscriptionData"]
