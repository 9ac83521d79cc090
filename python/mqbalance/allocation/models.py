"""`MessageQueue`, ordered and printed exactly like Java's.

>>> a = MessageQueue("TopicTest", "broker-a", 3)
>>> str(a)
'MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]'
>>> sorted([MessageQueue("T", "b", 1), MessageQueue("T", "a", 9)])[0].broker_name
'a'
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from mqbalance import _validate
from mqbalance.exceptions import InvalidQueueError

__all__ = ["MessageQueue", "java_string_key"]


def java_string_key(s: str) -> bytes:
    """A sort key that orders strings like Java's ``String.compareTo`` (UTF-16 code units).

    >>> sorted(["\\uff01", "\\U0001f600"], key=java_string_key) == ["\\U0001f600", "\\uff01"]
    True
    """
    if not isinstance(s, str):
        raise InvalidQueueError(f"java_string_key needs a str, got {s!r}", s)
    return s.encode("utf-16-be", "surrogatepass")


@dataclass(frozen=True, slots=True)
class MessageQueue:
    """A RocketMQ message queue: ``(topic, broker_name, queue_id)``.

    Frozen and hashable; equality on all three fields; ordering is Java's ``compareTo`` (topic,
    then broker name, by UTF-16 code units, then queue id); ``str()`` is Java's ``toString()``,
    which is also the queue's consistent-hash key. ``queue_id`` is a Java ``int``.
    """

    topic: str
    broker_name: str
    queue_id: int

    def __post_init__(self) -> None:
        for field in ("topic", "broker_name"):
            value = getattr(self, field)
            if not isinstance(value, str):
                raise InvalidQueueError(f"MessageQueue.{field} must be a str, got {value!r}", value)
        q = self.queue_id
        if type(q) is not int:  # numpy integers and other int-likes become a plain int
            if isinstance(q, (bool, float)) or type(q).__name__ == "bool_" or not hasattr(q, "__index__"):
                raise InvalidQueueError(f"MessageQueue.queue_id must be an int, got {q!r}", q)
            object.__setattr__(self, "queue_id", operator.index(q))
        if not _validate.is_java_int(self.queue_id):
            raise InvalidQueueError(f"MessageQueue.queue_id {q} is outside Java's int range", q)

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"

    def java_key(self) -> tuple[bytes, bytes, int]:
        """Sort key in Java ``MessageQueue.compareTo`` order."""
        return (java_string_key(self.topic), java_string_key(self.broker_name), self.queue_id)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.java_key() < other.java_key()

    def __le__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.java_key() <= other.java_key()

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.java_key() > other.java_key()

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.java_key() >= other.java_key()
