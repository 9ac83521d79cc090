"""Kafka fleets: the snapshot model (:mod:`~mqbalance.fleet.kafka.snapshot`), read from a running
cluster (:mod:`~mqbalance.fleet.kafka.live`, needs kafka-python), the facts per (group, topic)
and the what-if of the assignors (:mod:`~mqbalance.fleet.kafka.audit`, through the rules shared
with RocketMQ fleets in :mod:`mqbalance.fleet.findings`), and the same audit in Spark's executors
(:mod:`~mqbalance.fleet.kafka.spark`); the classic groups' generations from the coordinator's
records (:mod:`~mqbalance.fleet.kafka.group_log`, for ``watch --bootstrap``).

Bottom to top: ``snapshot  <  live, audit  <  spark``.
"""
