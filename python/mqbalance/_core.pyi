"""Private Rust extension. Use the ``mqbalance`` facade instead."""

from typing import Any, final

import numpy as np
import numpy.typing as npt

MAX_RING_ENTRIES: int

_StrColumn = list[Any] | tuple[list[Any], npt.NDArray[np.uint32]]

@final
class Strategy:
    def __new__(
        cls,
        kind: str,
        *,
        virtual_node_cnt: int = 10,
        charset: str = "UTF-8",
        consumer_idcs: set[str] | None = None,
        inner: Strategy | None = None,
    ) -> Strategy: ...
    @property
    def name(self) -> str: ...

def allocate_positions(
    strategy: Strategy,
    current_id: str | None,
    topics: _StrColumn,
    brokers: _StrColumn,
    queue_ids: npt.NDArray[np.int64],
    consumers: list[Any],
    *,
    queue_rooms: _StrColumn | None = None,
    consumer_rooms: _StrColumn | None = None,
    room_sep: str | None = None,
) -> npt.NDArray[np.uint32]: ...
def assign_positions(
    strategy: Strategy,
    topics: _StrColumn,
    brokers: _StrColumn,
    queue_ids: npt.NDArray[np.int64],
    consumers: list[Any],
    *,
    queue_rooms: _StrColumn | None = None,
    consumer_rooms: _StrColumn | None = None,
    room_sep: str | None = None,
) -> list[list[int]]: ...
def owners(
    strategy: Strategy,
    topics: _StrColumn,
    brokers: _StrColumn,
    queue_ids: npt.NDArray[np.int64],
    consumers: list[Any],
    *,
    presorted: bool = False,
    queue_rooms: _StrColumn | None = None,
    consumer_rooms: _StrColumn | None = None,
    room_sep: str | None = None,
) -> npt.NDArray[np.int64]: ...
def sort_strings_order(items: list[Any]) -> npt.NDArray[np.uint32]: ...
def sort_queues_order(topics: _StrColumn, brokers: _StrColumn, queue_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]: ...
def ring_hash(text: str, charset: str = "UTF-8") -> int: ...
