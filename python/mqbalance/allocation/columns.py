"""Turning caller inputs into what ``_core`` extracts: lists of str, ``(dictionary, codes)``
pairs for Arrow columns, and int64 numpy arrays for queue ids. Private."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from mqbalance import _core
from mqbalance._validate import JAVA_INT_MAX, JAVA_INT_MIN, not_a_collection
from mqbalance._validate import check_lengths as check_lengths
from mqbalance.allocation.models import MessageQueue
from mqbalance.exceptions import InvalidClientIdError, InvalidQueueError

StrColumn = list[Any] | tuple[list[Any], np.ndarray]


def _arrow_column(col: Any, what: str) -> StrColumn | None:
    """``(dictionary, codes)`` for a pyarrow (chunked) string or dictionary array, else None."""
    pa = _pyarrow()
    if pa is None or not isinstance(col, (pa.Array, pa.ChunkedArray)):
        return None
    import pyarrow.compute as pc

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if col.null_count:
        row = int(pc.index(col.is_null(), True).as_py())
        raise InvalidQueueError(f"{what}[{row}] is null", None)
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    codes = col.indices.to_numpy(zero_copy_only=False).astype(np.uint32, copy=False)
    return (col.dictionary.to_pylist(), codes)


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:  # pragma: no cover - pyarrow is optional
        return None
    return pyarrow


def str_column(col: Any, what: str) -> StrColumn:
    """A string column for ``_core``: a list of str, or ``(dictionary, uint32 codes)``. A lone
    ``str`` is refused (it would be read as a column of its characters)."""
    arrow = _arrow_column(col, what)
    if arrow is not None:
        return arrow
    if isinstance(col, (str, bytes)) or not hasattr(col, "__iter__"):
        raise InvalidQueueError(f"{what} must be a column of str, not a single {type(col).__name__} {col!r}", col)
    if isinstance(col, list):
        return col
    if isinstance(col, np.ndarray):
        values: list[Any] = col.tolist()
        return values
    return list(col)


def queue_ids(col: Any) -> np.ndarray:
    """Queue ids as int64, every value checked to be an integer (Java ``int`` range is checked in
    Rust, where the row is named)."""
    pa = _pyarrow()
    if pa is not None and isinstance(col, (pa.Array, pa.ChunkedArray)):
        if col.null_count:
            raise InvalidQueueError("queue_ids contains null", None)
        col = col.to_numpy(zero_copy_only=False)
    arr = col if isinstance(col, np.ndarray) else None
    if arr is None:
        try:
            arr = np.asarray(col)
        except (OverflowError, ValueError) as e:
            raise InvalidQueueError(f"queue_ids could not be read as integers: {e}", None) from e
    if arr.ndim != 1:
        raise InvalidQueueError(f"queue_ids must be one-dimensional, got shape {arr.shape}: {col!r}", arr.shape)
    if arr.dtype.kind == "i":
        return np.ascontiguousarray(arr, dtype=np.int64)  # views like arr[::2] are copied
    if arr.dtype.kind == "u":
        too_big = np.flatnonzero(arr > JAVA_INT_MAX)
        if too_big.size:
            i = int(too_big[0])
            raise InvalidQueueError(f"queue_ids[{i}] = {arr[i]} is outside Java's int range", int(arr[i]))
        return arr.astype(np.int64)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    # Objects, floats, bools: accept only true ints, name the first offender.
    out = np.empty(arr.size, dtype=np.int64)
    values = list(col) if isinstance(col, (list, tuple)) else arr.tolist()
    for i, v in enumerate(values):
        if not isinstance(v, int) or isinstance(v, bool):
            raise InvalidQueueError(f"queue_ids[{i}] must be an int, got {v!r}", v)
        if not JAVA_INT_MIN <= v <= JAVA_INT_MAX:
            raise InvalidQueueError(f"queue_ids[{i}] = {v} is outside Java's int range", v)
        out[i] = v
    return out


def column_len(col: Any, what: str) -> int:
    """Length of a column argument; a lone ``str`` or a non-sized value is refused by name."""
    if isinstance(col, (str, bytes)) or not hasattr(col, "__len__"):
        raise InvalidQueueError(f"{what} must be a column (list, numpy or Arrow array), got {col!r}", col)
    return len(col)


def queue_columns(queues: Sequence[MessageQueue]) -> tuple[list[str], list[str], np.ndarray]:
    """Columns of a list of :class:`MessageQueue` (fields are validated by the dataclass)."""
    for i, q in enumerate(queues):
        if not isinstance(q, MessageQueue):
            raise InvalidQueueError(f"queues[{i}] must be a MessageQueue, got {q!r}", q)
    topics = [q.topic for q in queues]
    brokers = [q.broker_name for q in queues]
    ids = np.fromiter((q.queue_id for q in queues), dtype=np.int64, count=len(queues))
    return topics, brokers, ids


def string_buffers(col: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
    """A pyarrow string column as its ``(offsets int64, data uint8)`` buffers: the bytes a view
    without a copy, the offsets too for a ``large_string`` column (a ``string`` column's 32-bit
    offsets are widened; a chunked column is made one array first); nulls are refused by index.

    >>> import pyarrow as pa
    >>> offsets, data = string_buffers(pa.array(["ab", "", "c", "d"]).slice(1), "ids")
    >>> offsets.tolist(), bytes(data[offsets[0]:offsets[-1]])
    ([2, 2, 3, 4], b'cd')
    """
    pa = _pyarrow()
    if pa is None or not isinstance(col, (pa.Array, pa.ChunkedArray)):
        if isinstance(col, (str, bytes)) or not hasattr(col, "__iter__"):
            raise InvalidClientIdError(f"{what} must be a column of client ids, got {col!r}", col)
        if pa is None:  # pragma: no cover - pyarrow is optional
            raise InvalidClientIdError(f"{what}: a column of client ids needs pyarrow", None)
        items = list(col)
        bad = next((i for i, v in enumerate(items) if not isinstance(v, str)), None)
        if bad is not None:
            raise InvalidClientIdError(f"{what}[{bad}] must be a str, got {items[bad]!r}", items[bad])
        try:
            col = pa.array(items, type=pa.string())
        except (UnicodeEncodeError, pa.ArrowException) as e:  # a lone surrogate
            raise InvalidClientIdError(f"{what}: a client id is not valid text: {e}", None) from None
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    large = pa.types.is_large_string(col.type)
    if not (large or pa.types.is_string(col.type)):
        raise InvalidClientIdError(f"{what} must be strings, got a column of {col.type}", str(col.type))
    if col.null_count:
        import pyarrow.compute as pc

        row = int(pc.index(col.is_null(), True).as_py())
        raise InvalidClientIdError(f"{what}[{row}] is null", None)
    _, off, data = col.buffers()
    offsets = np.frombuffer(off, dtype=np.int64 if large else np.int32)[col.offset : col.offset + len(col) + 1]
    return (
        offsets.astype(np.int64, copy=False),
        np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8),
    )


def id_list(consumers: Iterable[str] | None) -> list[Any]:
    """Client ids as a list (element types are checked in Rust, which names the bad index)."""
    if consumers is None:
        return []
    if isinstance(consumers, (str, bytes)):
        raise InvalidClientIdError(
            f"consumers must be a list of client ids, not a single {type(consumers).__name__} {consumers!r}", consumers
        )
    if not hasattr(consumers, "__iter__"):
        raise InvalidClientIdError(f"consumers must be a list of client ids, got {consumers!r}", consumers)
    return consumers if isinstance(consumers, list) else list(consumers)


def check_current_id(current_id: Any) -> None:
    if current_id is None:
        return
    if not isinstance(current_id, str):
        raise InvalidClientIdError(f"current_id must be a str or None, got {current_id!r}", current_id)
    try:
        current_id.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidClientIdError(
            f"current_id is not valid Unicode (lone surrogate?): {current_id!r}", current_id
        ) from e


class QueueTable(Sequence[MessageQueue]):
    """An immutable list of queues prepared once for many ``allocate`` / ``assign`` calls: the
    queues' columns are extracted and checked here, so a call over it only reads the consumer ids
    (a 1M-queue table saves about a second of extraction per call). What a client reuses between
    rebalances while the topic's route is unchanged. Results hold these very objects.

    >>> from mqbalance import strategy
    >>> table = QueueTable(MessageQueue("T", "b", i) for i in range(5))
    >>> [q.queue_id for q in strategy("AVG").allocate("cg", "c2", table, ["c1", "c2"])]
    [3, 4]
    """

    __slots__ = ("_items", "_handle")

    def __init__(self, queues: Iterable[MessageQueue]) -> None:
        if not_a_collection(queues):
            raise InvalidQueueError(f"queues must be a sequence of MessageQueue, got {queues!r}", queues)
        items = tuple(queues)
        self._items = items
        self._handle = _core.QueueTable(*queue_columns(items))

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> MessageQueue: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[MessageQueue, ...]: ...
    def __getitem__(self, index: int | slice) -> MessageQueue | tuple[MessageQueue, ...]:
        return self._items[index]

    def __iter__(self) -> Iterator[MessageQueue]:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"QueueTable(<{len(self._items)} queues>)"
