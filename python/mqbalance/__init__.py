"""mqbalance — message-queue consumer-group load balancing, bit-exact with the Java clients.

The packages, one product each: :mod:`~mqbalance.allocation` (RocketMQ queue allocation, re-exported
here), :mod:`~mqbalance.kafka` (Kafka assignment), :mod:`~mqbalance.fault` (the producer's broker
fault isolation), :mod:`~mqbalance.rebalance` (the rebalance state machines),
:mod:`~mqbalance.sim` (simulation), :mod:`~mqbalance.fleet` (fleet snapshots and audits, on Spark),
:mod:`~mqbalance.coordination` (consumer groups on ZooKeeper), :mod:`~mqbalance.remoting`
(RocketMQ's wire protocol) and :mod:`~mqbalance.rocketmq` (members of a real RocketMQ cluster).

>>> from mqbalance import MessageQueue, strategy, sort_queues, sort_client_ids
>>> queues = sort_queues(MessageQueue("TopicTest", b, q) for b in ("broker-b", "broker-a") for q in range(4))
>>> ids = sort_client_ids(["10.0.0.8@DEFAULT", "10.0.0.7@DEFAULT", "10.0.0.9@DEFAULT"])
>>> mine = strategy("AVG").allocate("cg-orders", "10.0.0.8@DEFAULT", queues, ids)
>>> [str(q) for q in mine][0]
'MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]'
"""

from mqbalance import allocation as _allocation
from mqbalance import exceptions as _exceptions
from mqbalance.allocation import *  # noqa: F403 - the allocation API, listed in allocation.__all__
from mqbalance.exceptions import *  # noqa: F403 - the exception classes, listed in exceptions.__all__

__version__ = "0.1.0"

__all__ = [*_allocation.__all__, *_exceptions.__all__]
