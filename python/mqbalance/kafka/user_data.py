"""The userData layout of Kafka's Java ``StickyAssignor`` (``StickyAssignorUserData`` v0/v1), so
Java and Python members of one group can read each other's previous assignments.

v1 (what Java writes): ``int32 n`` then ``n × (int16 len, UTF-8 topic, int32 m, m × int32
partition)``, then ``int32 generation``. v0 has no generation. Decoding tries v1, then v0, like
Java; undecodable data means "no previous assignment" (``None``). The codec is the core's
(``mqbalance_core::assign::user_data``, also what the sticky assignors read); this module checks
the Python arguments.

>>> data = encode([("t", 0), ("t", 2)], 7)
>>> decode(data)
([('t', 0), ('t', 2)], 7)
"""

from __future__ import annotations

from collections.abc import Iterable

from mqbalance import _core, _validate
from mqbalance.exceptions import InvalidInputError

__all__ = ["encode", "decode"]


def encode(partitions: Iterable[tuple[str, int]], generation: int | None) -> bytes:
    """v1 bytes for the given partitions (grouped by topic, partitions ascending)."""
    if _validate.not_a_collection(partitions):
        raise InvalidInputError(f"partitions must be a sequence of (topic, partition), got {partitions!r}", partitions)
    topics: list[str] = []
    numbers: list[int] = []
    for i, tp in enumerate(partitions):
        if isinstance(tp, (str, bytes)) or not hasattr(tp, "__len__") or len(tp) != 2:
            raise InvalidInputError(f"partitions[{i}] must be a (topic, partition) pair, got {tp!r}", tp)
        topic, partition = tp
        if not isinstance(topic, str):
            raise InvalidInputError(f"partitions[{i}].topic must be a str, got {topic!r}", topic)
        try:
            size = len(topic.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidInputError(
                f"partitions[{i}].topic is not valid Unicode (lone surrogate?): {topic!r}", topic
            ) from None
        if size > _core.STICKY_USER_DATA_MAX_TOPIC_BYTES:
            raise InvalidInputError(
                f"partitions[{i}].topic is {size} UTF-8 bytes; "
                f"Kafka's string limit is {_core.STICKY_USER_DATA_MAX_TOPIC_BYTES}",
                topic,
            )
        topics.append(topic)
        numbers.append(_validate.java_int(partition, f"partitions[{i}].partition"))
    if generation is not None:
        generation = _validate.java_int(generation, "generation")
    return _core.sticky_user_data_encode(topics, numbers, generation)


def decode(data: bytes | None) -> tuple[list[tuple[str, int]], int | None] | None:
    """``(partitions, generation)`` from v1 or v0 data, or ``None`` if it is neither."""
    if not isinstance(data, (bytes, bytearray, memoryview)) and data is not None:
        raise InvalidInputError(f"data must be bytes or None, got {type(data).__name__} {data!r}", data)
    if not data:
        return None
    return _core.sticky_user_data_decode(data if type(data) is bytes else bytes(data))
