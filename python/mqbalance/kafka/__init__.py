"""Kafka consumer-group assignment: the classic client-side assignors, exact where Kafka is
deterministic (:mod:`.assignors`), the drop-in classes for kafka-python (:mod:`.kafka_python`,
imported on its own: it needs kafka-python) and Java's sticky userData layout (:mod:`.user_data`).

>>> from mqbalance.kafka import Subscription, assignor
>>> result = assignor("range").assign({"t": 3}, {"m1": Subscription(["t"]), "m2": Subscription(["t"])})
>>> [tp.partition for tp in result["m1"]], [tp.partition for tp in result["m2"]]
([0, 1], [2])
"""

from mqbalance.kafka.assignors import *  # noqa: F403 - the public names, listed in assignors.__all__
from mqbalance.kafka.assignors import __all__ as __all__
from mqbalance.kafka.server import (
    KAFKA_NEWEST_RELEASE,
    SERVER_ASSIGNORS,
    ServerMember,
    server_assign,
    server_assign_columns,
    what_if_names,
)

__all__ = [
    *__all__,
    "KAFKA_NEWEST_RELEASE",
    "SERVER_ASSIGNORS",
    "ServerMember",
    "server_assign",
    "server_assign_columns",
    "what_if_names",
]
