"""Machine-room resolvers for ``MACHINE_ROOM_NEARBY``.

A resolver answers two questions, like Java's ``MachineRoomResolver``: in which room is the broker
of a queue (``broker_room``), and in which room is a consumer (``consumer_room``). ``None`` or
``""`` means "unknown", which RocketMQ rejects (:class:`~mqbalance.exceptions.MachineRoomError`).

>>> r = PrefixRoomResolver()
>>> r.broker_room(MessageQueue("T", "hz@broker-a", 0)), r.consumer_room("sh@10.0.0.7@DEFAULT")
('hz', 'sh')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from mqbalance.allocation.models import MessageQueue
from mqbalance.exceptions import InvalidInputError

__all__ = ["RoomResolver", "PrefixRoomResolver"]


@runtime_checkable
class RoomResolver(Protocol):
    """What ``MACHINE_ROOM_NEARBY`` needs to know about rooms."""

    def broker_room(self, queue: MessageQueue) -> str | None: ...

    def consumer_room(self, client_id: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class PrefixRoomResolver:
    """Room = the text before the first ``sep`` (the whole text when there is none).

    This is the rule of the published golden vectors: ``"hz@broker-a"`` → ``hz``,
    ``"gz"`` → ``gz``, ``"@x"`` → ``""`` (rejected). It is computed inside the Rust core for bulk
    calls, so it costs nothing per queue.
    """

    sep: str = "@"

    def __post_init__(self) -> None:
        if not isinstance(self.sep, str) or not self.sep:
            raise InvalidInputError(f"PrefixRoomResolver.sep must be a non-empty str, got {self.sep!r}", self.sep)

    def _room(self, text: str) -> str:
        return text.split(self.sep, 1)[0]

    def broker_room(self, queue: MessageQueue) -> str:
        return self._room(queue.broker_name)

    def consumer_room(self, client_id: str) -> str:
        return self._room(client_id)
