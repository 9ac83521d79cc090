"""mqbalance — message-queue consumer-group load balancing, bit-exact with the Java clients.

>>> from mqbalance import MessageQueue, strategy, sort_queues, sort_client_ids
>>> queues = sort_queues(MessageQueue("TopicTest", b, q) for b in ("broker-b", "broker-a") for q in range(4))
>>> ids = sort_client_ids(["10.0.0.8@DEFAULT", "10.0.0.7@DEFAULT", "10.0.0.9@DEFAULT"])
>>> mine = strategy("AVG").allocate("cg-orders", "10.0.0.8@DEFAULT", queues, ids)
>>> [str(q) for q in mine][0]
'MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]'
"""

from . import bulk
from . import exceptions as _exceptions
from .exceptions import *  # noqa: F403 - the exception classes, listed in exceptions.__all__
from .models import MessageQueue, java_string_key
from .ordering import sort_client_ids, sort_queues
from .registry import REGISTRY, StrategyName, StrategySpec, strategy
from .rooms import PrefixRoomResolver, RoomResolver
from .strategies import (
    AllocateStrategy,
    Avg,
    AvgByCircle,
    Config,
    ConsistentHash,
    ConsistentHashBounded,
    MachineRoom,
    MachineRoomNearby,
    Sticky,
)

__version__ = "0.1.0"

__all__ = [
    "MessageQueue",
    "java_string_key",
    "sort_client_ids",
    "sort_queues",
    "strategy",
    "StrategyName",
    "StrategySpec",
    "REGISTRY",
    "AllocateStrategy",
    "Avg",
    "AvgByCircle",
    "ConsistentHash",
    "ConsistentHashBounded",
    "Sticky",
    "MachineRoom",
    "MachineRoomNearby",
    "Config",
    "RoomResolver",
    "PrefixRoomResolver",
    "bulk",
    *_exceptions.__all__,
]
