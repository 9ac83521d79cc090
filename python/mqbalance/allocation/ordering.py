"""Java orderings of client ids and queues, computed in Rust.

``RebalanceImpl`` sorts both lists before allocating; every client of a group must sort the same
way, so Python's code-point order (which differs from Java's UTF-16 order for characters above
U+FFFF against U+E000..U+FFFF) would not do.

>>> sort_client_ids(["\\uff01b", "\\U0001f600a", "10.0.0.7@DEFAULT"])
['10.0.0.7@DEFAULT', '😀a', '！b']
"""

from __future__ import annotations

from collections.abc import Iterable

from mqbalance import _core
from mqbalance._validate import not_a_collection
from mqbalance.allocation.columns import id_list, queue_columns
from mqbalance.allocation.models import MessageQueue
from mqbalance.exceptions import InvalidQueueError

__all__ = ["sort_client_ids", "sort_queues"]


def sort_client_ids(ids: Iterable[str] | None) -> list[str]:
    """Client ids in Java ``String.compareTo`` order (stable; duplicates kept); ``None`` is empty."""
    items = list(id_list(ids))
    return [items[i] for i in _core.sort_strings_order(items)]


def sort_queues(queues: Iterable[MessageQueue] | None) -> list[MessageQueue]:
    """Queues in Java ``MessageQueue.compareTo`` order (stable; duplicates kept); ``None`` is
    empty, as for :func:`sort_client_ids`."""
    if queues is None:
        return []
    if not_a_collection(queues):
        raise InvalidQueueError(f"queues must be an iterable of MessageQueue, got {queues!r}", queues)
    items = list(queues)
    return [items[i] for i in _core.sort_queues_order(*queue_columns(items))]
