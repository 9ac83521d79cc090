"""Boundary converters: one per kind of value a caller passes, used by every entry point.

Each converter returns the value in the form the library works with, or raises a typed
:class:`~mqbalance.exceptions.MQBalanceError` whose message names the parameter and the value as
passed (never a clamped or converted one). Counts are checked against Java's ``int`` range *and*
against the memory the request would need, before anything is allocated. Private.

>>> count(3, "sends")
3
>>> count(2**62, "sends", bytes_each=40)
Traceback (most recent call last):
...
mqbalance.exceptions.ResourceLimitError: sends = 4611686018427387904 is outside Java's int range (0..2147483647)
>>> str_sequence("TopicA", "topics")
Traceback (most recent call last):
...
mqbalance.exceptions.InvalidInputError: topics must be a sequence of str, not a single str 'TopicA'
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from mqbalance.exceptions import (
    EpsilonTooSmallError,
    InvalidEpsilonError,
    InvalidInputError,
    LengthMismatchError,
    MQBalanceError,
    ResourceLimitError,
)

#: Java's ``int`` range: the one place its bounds are written (:func:`is_java_int`)
JAVA_INT_MIN = -(2**31)
JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MIN = -(2**63)
JAVA_LONG_MAX = 2**63 - 1


def is_java_int(value: int, *, low: int = JAVA_INT_MIN) -> bool:
    """``value`` fits a Java ``int`` (and is at least ``low``, e.g. 0 for a count).

    >>> is_java_int(2**31 - 1), is_java_int(2**31), is_java_int(-1, low=0)
    (True, False, False)
    """
    return low <= value <= JAVA_INT_MAX


#: Environment variable overriding the memory budget (bytes) a single call may ask for.
BUDGET_ENV = "MQBALANCE_MEMORY_BUDGET"


def _limit_as() -> int | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def memory_budget() -> int:
    """Bytes one call may allocate for its result: ``$MQBALANCE_MEMORY_BUDGET`` if set, else half
    of the smaller of physical memory and the address-space limit (``ulimit -v``)."""
    env = os.environ.get(BUDGET_ENV)
    if env:
        try:
            return max(0, int(env))
        except ValueError:
            raise InvalidInputError(f"{BUDGET_ENV} must be a number of bytes, got {env!r}", env) from None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not on POSIX
        total = 8 << 30
    cap = _limit_as()
    if cap is not None:
        total = min(total, cap)
    return total // 2


def human_bytes(n: float) -> str:
    """``1536`` → ``'1.5 KiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def check_memory(name: str, value: Any, needed: int, error: type[MQBalanceError] = ResourceLimitError) -> None:
    """Refuse a request that would need more than :func:`memory_budget` bytes; the message names
    the parameter, its value and the memory it would take."""
    budget = memory_budget()
    if needed > budget:
        raise error(
            f"{name} = {value!r} would need about {human_bytes(needed)} of memory, more than the "
            f"{human_bytes(budget)} budget (set {BUDGET_ENV} to raise it)",
            value,
        )


def not_a_collection(value: object) -> bool:
    """True for a lone ``str``/``bytes`` (which would iterate as characters) or a non-iterable."""
    return isinstance(value, (str, bytes)) or not hasattr(value, "__iter__")


def integer(value: Any, name: str, *, error: type[MQBalanceError] = InvalidInputError) -> int:
    """An int-like value (``int``, numpy integer, anything with ``__index__``) as ``int``; ``bool``,
    floats (even ``2.0``), strings and ``None`` are refused."""
    if isinstance(value, (bool, np.bool_, float, np.floating, str, bytes)):
        raise error(f"{name} must be an int, got {value!r}", value)
    try:
        return operator.index(value)
    except TypeError:
        raise error(f"{name} must be an int, got {value!r}", value) from None


def java_int(
    value: Any, name: str, *, minimum: int = JAVA_INT_MIN, error: type[MQBalanceError] = InvalidInputError
) -> int:
    """An int within Java's ``int`` range (and ``>= minimum``)."""
    v = integer(value, name, error=error)
    if not minimum <= v <= JAVA_INT_MAX:
        raise error(f"{name} = {v} is outside Java's int range ({minimum}..{JAVA_INT_MAX})", value)
    return v


def java_long(
    value: Any, name: str, *, minimum: int = JAVA_LONG_MIN, error: type[MQBalanceError] = InvalidInputError
) -> int:
    """An int within Java's ``long`` range (and ``>= minimum``)."""
    v = integer(value, name, error=error)
    if not minimum <= v <= JAVA_LONG_MAX:
        raise error(f"{name} = {v} is outside Java's long range ({minimum}..{JAVA_LONG_MAX})", value)
    return v


def count(
    value: Any,
    name: str,
    *,
    bytes_each: int = 0,
    maximum: int = JAVA_INT_MAX,
    error: type[MQBalanceError] = InvalidInputError,
) -> int:
    """A non-negative count: int-like, ``<= maximum`` (Java's ``int`` by default), and whose result
    of ``bytes_each`` bytes per unit fits in :func:`memory_budget` — checked before allocating."""
    v = integer(value, name, error=error)
    if v < 0:
        raise error(f"{name} must be >= 0, got {v}", value)
    if v > maximum:
        what = "Java's int range" if maximum == JAVA_INT_MAX else "the limit"
        raise ResourceLimitError(f"{name} = {v} is outside {what} (0..{maximum})", value)
    if bytes_each:
        check_memory(name, v, v * bytes_each)
    return v


def number(
    value: Any,
    name: str,
    *,
    positive: bool = False,
    minimum: float = 0.0,
    error: type[MQBalanceError] = InvalidInputError,
) -> float:
    """A finite real number ``>= minimum`` (``> minimum`` when ``positive``): NaN and ±inf are
    refused (a NaN passes every ``<= 0`` check, so it must be caught by name)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise error(f"{name} must be a number, got {value!r}", value)
    try:
        f = float(value)
    except OverflowError:  # an int beyond a double
        raise error(f"{name} = {value!r} is beyond a finite number", value) from None
    if math.isnan(f) or math.isinf(f):
        raise error(f"{name} must be finite, got {value!r}", value)
    if f < minimum or (positive and f <= minimum):
        raise error(f"{name} must be {'>' if positive else '>='} {minimum:g}, got {value!r}", value)
    return f


def duration_ms(
    value: Any, name: str, *, positive: bool = False, error: type[MQBalanceError] = InvalidInputError
) -> int:
    """A non-negative finite duration in whole milliseconds within Java's ``long``; a float must be
    integral (``1.5`` ms is refused, not truncated)."""
    f = number(value, name, positive=positive, error=error)
    if isinstance(value, (float, np.floating)) and not f.is_integer():
        raise error(f"{name} must be a whole number of milliseconds, got {value!r}", value)
    v = int(value) if not isinstance(value, (float, np.floating)) else int(f)
    if v > JAVA_LONG_MAX:
        raise error(f"{name} = {value!r} ms is outside Java's long range", value)
    return v


def epsilon(value: Any, name: str = "epsilon") -> float:
    """CONSISTENT_HASH_BOUNDED's ε: a finite number ``>= 0``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidEpsilonError(f"{name} must be a finite number >= 0, got {value!r}", value)
    try:
        f = float(value)
    except OverflowError:  # an int beyond a double
        f = math.inf
    if not math.isfinite(f):
        raise InvalidEpsilonError(f"{name} must be a finite number >= 0, got {value!r}", value)
    if f < 0:
        raise EpsilonTooSmallError(f"{name} = {value!r} is too small; the minimum is 0", value)
    return f


def text(value: Any, name: str, *, error: type[MQBalanceError] = InvalidInputError) -> str:
    """A ``str`` that encodes as UTF-8 (what Java, Kafka and Arrow see); a lone surrogate (which
    JSON's ``"\\ud800"`` produces) is refused by name."""
    if not isinstance(value, str):
        raise error(f"{name} must be a str, got {value!r}", value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise error(f"{name} is not valid Unicode (a lone surrogate?): {value!r}", value) from None
    return value


def str_sequence(
    value: Any, name: str, *, allow_none: bool = False, error: type[MQBalanceError] = InvalidInputError
) -> list[str]:
    """A sequence of ``str`` as a list. A lone ``str`` (or ``bytes``) is refused, not iterated into
    its characters; every element must be a ``str``."""
    if value is None:
        if allow_none:
            return []
        raise error(f"{name} must be a sequence of str, got None", value)
    if isinstance(value, (str, bytes)):
        raise error(f"{name} must be a sequence of str, not a single {type(value).__name__} {value!r}", value)
    if isinstance(value, np.ndarray):
        items: list[Any] = value.tolist() if value.ndim == 1 else [value]
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise error(f"{name} must be a sequence of str, got {type(value).__name__} {value!r}", value)
    for i, item in enumerate(items):
        text(item, f"{name}[{i}]", error=error)
    return items


def mapping(value: Any, name: str, *, error: type[MQBalanceError] = InvalidInputError) -> Any:
    """A mapping (``dict``-like: ``items()``), else a typed error."""
    if not hasattr(value, "items") or isinstance(value, (str, bytes)):
        raise error(f"{name} must be a mapping, got {type(value).__name__} {value!r}", value)
    return value


def int_array(
    value: Any,
    name: str,
    *,
    minimum: int = JAVA_INT_MIN,
    maximum: int = JAVA_INT_MAX,
    error: type[MQBalanceError] = InvalidInputError,
) -> np.ndarray:
    """A one-dimensional, C-contiguous ``int64`` array whose values are integers in
    ``minimum..maximum``; non-contiguous numpy views (``arr[::2]``) are copied, floats, bools and
    ``None`` are refused with the first offending position."""
    if isinstance(value, (str, bytes)):
        raise error(f"{name} must be a sequence of int, not a single {type(value).__name__} {value!r}", value)
    try:
        if hasattr(value, "to_numpy") and not isinstance(value, np.ndarray):
            if getattr(value, "null_count", 0):
                raise error(f"{name} contains null", None)
            value = value.to_numpy(zero_copy_only=False)
        arr = (
            value if isinstance(value, np.ndarray) else np.asarray(value if hasattr(value, "__len__") else list(value))
        )
    except (OverflowError, ValueError, TypeError) as e:
        raise error(f"{name} could not be read as integers: {e}", None) from e
    if arr.ndim != 1:
        raise error(f"{name} must be one-dimensional, got shape {arr.shape}", arr.shape)
    if arr.size and arr.dtype.kind not in "iu":
        for i, v in enumerate(arr.tolist()):
            if isinstance(v, bool) or not isinstance(v, int):
                raise error(f"{name}[{i}] must be an int, got {v!r}", v)
        try:
            arr = np.asarray(arr.tolist(), dtype=object)
            lo, hi = min(arr.tolist()), max(arr.tolist())
        except TypeError as e:  # pragma: no cover - guarded above
            raise error(f"{name} could not be read as integers: {e}", None) from e
        if lo < minimum or hi > maximum:
            i = next(k for k, v in enumerate(arr.tolist()) if not minimum <= v <= maximum)
            raise error(f"{name}[{i}] = {arr[i]} is outside {minimum}..{maximum}", arr[i])
        return np.array(arr.tolist(), dtype=np.int64)
    if arr.size:
        bad = np.flatnonzero((arr < minimum) | (arr > maximum)) if arr.dtype.kind == "i" else None
        if arr.dtype.kind == "u":
            bad = np.flatnonzero(arr > maximum) if minimum <= 0 else np.flatnonzero((arr < minimum) | (arr > maximum))
        if bad is not None and bad.size:
            i = int(bad[0])
            raise error(f"{name}[{i}] = {arr[i]} is outside {minimum}..{maximum}", int(arr[i]))
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_lengths(**columns: int) -> None:
    """Columns that must be aligned: equal lengths, else :class:`LengthMismatchError` naming each."""
    lengths = set(columns.values())
    if len(lengths) > 1:
        described = ", ".join(f"{k}={v}" for k, v in columns.items())
        raise LengthMismatchError(f"columns must have equal lengths, got {described}", columns)
