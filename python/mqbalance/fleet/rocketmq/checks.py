"""Checks of a RocketMQ snapshot's fields and columns, shared by its JSON and Parquet readers:
each problem a :class:`~mqbalance.exceptions.SnapshotError` naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from mqbalance._validate import JAVA_INT_MAX, JAVA_INT_MIN, is_java_int
from mqbalance.exceptions import SnapshotError


def field_error(where: str, message: str, value: Any = None) -> SnapshotError:
    return SnapshotError(f"{where}: {message}", value)


def get_field(obj: Any, key: str, kind: type | tuple[type, ...], where: str, *, optional: bool = False) -> Any:
    if not isinstance(obj, dict):
        shown = repr(obj) if len(repr(obj)) <= 60 else repr(obj)[:57] + "..."
        raise field_error(where, f"expected an object, got {type(obj).__name__} {shown}", obj)
    if key not in obj or obj[key] is None:
        if optional:
            return None
        raise field_error(where, f"missing field {key!r}", key)
    value = obj[key]
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise field_error(f"{where}.{key}", f"expected {names}, got {value!r}", value)
    if isinstance(value, str):
        utf8_text(value, f"{where}.{key}")
    return value


def utf8_text(text: str, where: str) -> str:
    """``text`` if it encodes as UTF-8 (what Arrow and every file format need); a lone surrogate
    (which JSON's ``\\ud800`` escapes can produce) is refused by name."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise field_error(where, f"not valid Unicode (a lone surrogate?): {text!r}", text) from None
    return text


def java_int(value: Any, where: str, *, count: bool) -> Any:
    """``value`` (already an int or None) within Java's ``int`` range, and ``>= 0`` for a count."""
    if value is None:
        return None
    if count and value < 0:
        raise field_error(where, f"must be >= 0, got {value}", value)
    if not is_java_int(value):
        raise field_error(
            where, f"must be within Java's int range ({JAVA_INT_MIN}..{JAVA_INT_MAX}), got {value}", value
        )
    return value


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise SnapshotError(f"duplicate key {key!r}", key)
            seen.add(key)
    return out


#: What the columnar checks catch and hand over to the entry-by-entry ones.
COLUMN_PROBLEMS = (
    pa.ArrowException,
    OverflowError,
    UnicodeEncodeError,
    TypeError,
    ValueError,
    KeyError,
    AttributeError,
)


def strict_column(values: list[Any], kind: pa.DataType, *, nulls: bool = False) -> pa.Array:
    """``values`` as one Arrow column of ``kind`` (``pa.string()`` or ``pa.int64()``), never coerced:
    a value of another Python type (a bool or float for an int, bytes for a str), a lone surrogate
    or (unless ``nulls``) a ``None`` raises (one of :data:`COLUMN_PROBLEMS`)."""
    allowed: set[type] = {str if kind == pa.string() else int}
    if nulls:
        allowed.add(type(None))
    if not set(map(type, values)) <= allowed:
        raise TypeError(f"a column of {kind} with other values")
    return pa.array(values, kind)


def check_java_ints(array: pa.Array, low: int, high: int) -> None:
    if len(array) > array.null_count:
        bounds = pc.min_max(array)
        if not low <= bounds["min"].as_py() <= bounds["max"].as_py() <= high:
            raise ValueError("out of range")


def key_column(column: pa.ChunkedArray | pa.Array) -> pa.Array | pa.ChunkedArray | None:
    """A strategy parameter column as strings for keying (``None``: a type this path does not key)."""
    kind = column.type
    if pa.types.is_null(kind):
        return column.cast(pa.string())
    if pa.types.is_string(kind):
        return column
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
        prefix = "i" if pa.types.is_integer(kind) else "f" if pa.types.is_floating(kind) else "b"
        return pc.binary_join_element_wise(prefix, column.cast(pa.string()), "")
    if pa.types.is_list(kind) and pa.types.is_string(kind.value_type):
        if pc.list_flatten(column).null_count:
            return None
        return pc.binary_join_element_wise("l", pc.binary_join(column, "\x1f"), "")
    return None


def distinct_rows(table: pa.Table, keys: list[str]) -> bool:
    """No two rows of ``table`` share ``keys``."""
    if table.num_rows == 0:
        return True
    counts = table.select(keys).group_by(keys, use_threads=False).aggregate([])
    return bool(counts.num_rows == table.num_rows)


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def check_types(where: str, checks: Iterable[tuple[str, Any, type]]) -> None:
    for name, v, kind in checks:
        if not isinstance(v, kind) or isinstance(v, bool):
            raise field_error(f"{where}.{name}", f"expected {kind.__name__}, got {v!r}", v)
