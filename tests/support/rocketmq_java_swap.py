"""A pytest plugin that runs the RocketMQ live tests written for the Rust port on Apache RocketMQ's
Java servers instead: ``rocketmq_cluster.RocketMQCluster`` (and so the ``rocketmq`` /
``rocketmq2`` fixtures and every test that builds a cluster itself) becomes
:class:`rocketmq_java_cluster.RocketMQJavaCluster`. Load it by name, with ``tests/support`` on the
path::

    PYTHONPATH=python:tests/support pytest -p rocketmq_java_swap tests/test_rocketmq_member.py

Tests that assert the Rust broker's own differences (one connection per client id) fail there, as
they should: the Java broker lists such an id once per connection.
"""

from __future__ import annotations

import rocketmq_cluster
from rocketmq_java_cluster import RocketMQJavaCluster

rocketmq_cluster.RocketMQCluster = RocketMQJavaCluster  # type: ignore[misc]
