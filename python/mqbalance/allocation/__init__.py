"""RocketMQ queue allocation, bit-exact with the Java client: the queue model and Java's orders
(:mod:`.models`, :mod:`.ordering`), the strategies (:mod:`.strategies`), the registry that names and
configures them (:mod:`.registry`: :class:`StrategySpec`, :func:`strategy`), machine rooms
(:mod:`.rooms`) and the columnar whole-fleet call (:mod:`.bulk`).

>>> from mqbalance.allocation import MessageQueue, strategy
>>> queues = [MessageQueue("T", "broker-a", q) for q in range(5)]
>>> [q.queue_id for q in strategy("AVG").allocate("cg", "c2", queues, ["c1", "c2"])]
[3, 4]
"""

from mqbalance.allocation import bulk
from mqbalance.allocation.models import MessageQueue, java_string_key
from mqbalance.allocation.ordering import sort_client_ids, sort_queues
from mqbalance.allocation.registry import REGISTRY, StrategyInfo, StrategyName, StrategySpec, strategy
from mqbalance.allocation.rooms import PrefixRoomResolver, RoomResolver
from mqbalance.allocation.strategies import *  # noqa: F403 - the strategy classes, listed in strategies.__all__
from mqbalance.allocation.strategies import __all__ as _strategy_classes

__all__ = [
    "MessageQueue",
    "java_string_key",
    "sort_client_ids",
    "sort_queues",
    "strategy",
    "StrategyName",
    "StrategySpec",
    "StrategyInfo",
    "REGISTRY",
    *_strategy_classes,
    "RoomResolver",
    "PrefixRoomResolver",
    "bulk",
]
