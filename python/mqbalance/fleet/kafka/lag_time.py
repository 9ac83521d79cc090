"""Lag in seconds for Kafka groups: the timestamp of the record at each lagging partition's
committed offset (the oldest record the group has not consumed), read with kafka-python's consumer
— assigned, not subscribed, no group id, nothing committed.

A record's timestamp is of one of two types, given with it: ``CreateTime`` (the producer's clock
when it built the record: the lag a user sees includes time the record spent in the producer and
any skew between the producer's clock and ours) or ``LogAppendTime`` (the broker's clock when it
appended the record, for topics with ``message.timestamp.type=LogAppendTime``: RocketMQ's store
time, the lag since the data reached the cluster). A committed offset below the log start
(retention) reads the first record still there; at most ``budget`` partitions are read, most
lagging first (the rest are left out, and counted).

>>> plan_reads({("g", "t", 0): 5, ("g", "t", 1): 9}, {("t", 0): 50, ("t", 1): 9}, budget=10)
[('t', 0, 5)]
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kafka import KafkaConsumer
from kafka.structs import TopicPartition

__all__ = ["TIMESTAMP_TYPES", "plan_reads", "read_record_times"]

#: kafka-python's ``timestamp_type`` values, by Kafka's names
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


def plan_reads(
    committed: Mapping[tuple[str, str, int], int], ends: Mapping[tuple[str, int], int], *, budget: int
) -> list[tuple[str, int, int]]:
    """The ``(topic, partition, offset)`` positions to read: one per lagging (group, topic,
    partition), the same position once, most lagging first, at most ``budget``."""
    lag: dict[tuple[str, int, int], int] = {}
    for (_g, t, p), offset in committed.items():
        end = ends.get((t, p))
        if end is not None and end > offset:
            lag[(t, p, offset)] = max(lag.get((t, p, offset), 0), end - offset)
    return sorted(lag, key=lambda k: (-lag[k], k))[:budget]


def read_record_times(
    bootstrap: str, positions: list[tuple[str, int, int]], *, timeout: float = 10.0, **config: Any
) -> dict[tuple[str, int, int], tuple[int, int, str]]:
    """Per position ``(topic, partition, offset)``, ``(offset of the record read, its timestamp in
    ms, its type)``: the first record at or after the offset (positions without one within
    ``timeout`` are left out). ``config``: more of KafkaConsumer's settings."""
    out: dict[tuple[str, int, int], tuple[int, int, str]] = {}
    if not positions:
        return out
    rounds: list[dict[TopicPartition, int]] = []  # a consumer holds one position per partition at a time
    for t, p, offset in positions:
        tp = TopicPartition(t, p)
        for r in rounds:
            if tp not in r:
                r[tp] = offset
                break
        else:
            rounds.append({tp: offset})
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap.split(","),
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",  # below the log start: the first record still there
        client_id="mqbalance-lag-time",
        max_partition_fetch_bytes=64 * 1024,
        **config,
    )
    try:
        deadline = time.monotonic() + timeout
        for wanted in rounds:
            consumer.assign(list(wanted))
            for tp, offset in wanted.items():
                consumer.seek(tp, offset)
            left = set(wanted)
            while left and time.monotonic() < deadline:
                got = consumer.poll(timeout_ms=200, max_records=500)
                for tp, records in got.items():
                    if tp in left and records:
                        first = records[0]
                        out[(tp.topic, tp.partition, wanted[tp])] = (
                            first.offset,
                            first.timestamp,
                            TIMESTAMP_TYPES.get(first.timestamp_type, str(first.timestamp_type)),
                        )
                        left.discard(tp)
                        consumer.pause(tp)
            consumer.resume(*consumer.paused())
    finally:
        consumer.close()
    return out
