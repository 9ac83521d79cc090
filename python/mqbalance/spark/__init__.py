"""Assignment as Spark DataFrame functions, over the user's own DataFrames (classic sessions and
Spark Connect): :func:`assign_queues` (RocketMQ), :func:`assign_partitions` (Kafka), and the
building blocks for a cogrouped ``applyInArrow`` of your own (:func:`queue_assigner`,
:func:`partition_assigner`, with their output schemas) and for a ``mapInArrow`` over rows
partitioned by group (:func:`queue_partition_assigner`). ``pyspark`` is imported only when a
DataFrame function is called; the fleet audit's Spark code is :mod:`mqbalance.fleet.spark`.

>>> import pyarrow as pa
>>> queues = pa.table({"group": ["g"] * 2, "topic": ["T"] * 2, "broker_name": ["b"] * 2, "queue_id": [1, 0]})
>>> queue_assigner("AVG")(queues, pa.table({"group": ["g"], "client_id": ["c1"]})).column("client_id").to_pylist()
['c1', 'c1']
"""

from mqbalance.spark.arrow import QUEUE_ASSIGNMENT_SCHEMA, QueueColumns, queue_assigner, queue_partition_assigner
from mqbalance.spark.dataframes import assign_partitions, assign_queues
from mqbalance.spark.kafka import PARTITION_ASSIGNMENT_SCHEMA, PartitionColumns, partition_assigner

__all__ = [
    "PARTITION_ASSIGNMENT_SCHEMA",
    "QUEUE_ASSIGNMENT_SCHEMA",
    "PartitionColumns",
    "QueueColumns",
    "assign_partitions",
    "assign_queues",
    "partition_assigner",
    "queue_assigner",
    "queue_partition_assigner",
]
