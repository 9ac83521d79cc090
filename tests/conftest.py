"""Fixtures shared by test modules."""

from kafka_cluster import tansu  # noqa: F401  (a Tansu broker, Kafka protocol, per module)
from rocketmq_cluster import rocketmq, rocketmq2  # noqa: F401  (a name server and 1 or 2 brokers per module)
from spark_cluster import spark_cluster, spark_connect  # noqa: F401  (module-scoped Spark standalone cluster / Connect server)
