"""Kafka consumer-group assignment: the classic client-side assignors, exact where Kafka is
deterministic (:mod:`.assignors`), the drop-in classes for kafka-python (:mod:`.kafka_python`,
imported on its own: it needs kafka-python) and Java's sticky userData layout (:mod:`.user_data`).

>>> from mqbalance.kafka import Subscription, assignor
>>> result = assignor("range").assign({"t": 3}, {"m1": Subscription(["t"]), "m2": Subscription(["t"])})
>>> [tp.partition for tp in result["m1"]], [tp.partition for tp in result["m2"]]
([0, 1], [2])
"""

from mqbalance.kafka.assignors import *  # noqa: F403 - the public names, listed in assignors.__all__
from mqbalance.kafka.assignors import __all__ as _assignor_names
from mqbalance.kafka.server import *  # noqa: F403 - the broker-side assignors, listed in server.__all__
from mqbalance.kafka.server import __all__ as _server_names

__all__ = [*_assignor_names, *_server_names]
