"""A small declarative reader for configuration mappings read from YAML or JSON: a
:class:`Schema` maps each key of a mapping to an attribute of a typed class (a frozen dataclass)
and a parser; :meth:`Schema.read` checks the mapping, refuses unknown keys, parses every key it
finds, reports the first problem as a :class:`SchemaError` naming the field path
(``events[2].at``) and the bad value, and builds the object. Absent keys (or ``null``) take the
class's own default or one given to ``read``.

It depends on nothing but :mod:`mqbalance.exceptions`, so other readers (fleet snapshots) can use
it too; callers turn :class:`SchemaError` into their own error class at their boundary.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Link:
...     delay_ms: int = 0
...     loss: float = 0.0
>>> LINK = Schema(Link, {"delay": Key("delay_ms", duration()), "loss": Key("loss", number(maximum=1.0))})
>>> LINK.read({"delay": "200ms"}, "network")
Link(delay_ms=200, loss=0.0)
>>> LINK.read({"loss": 2}, "network")
Traceback (most recent call last):
...
mqbalance.exceptions.SchemaError: network.loss: expected a number in [0, 1], got 2
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, TypeVar

from mqbalance.exceptions import SchemaError

__all__ = [
    "SchemaError",
    "Parser",
    "Key",
    "Schema",
    "fail",
    "mapping",
    "duration",
    "number",
    "integer",
    "text",
    "flag",
    "optional",
]

T = TypeVar("T")
Parser = Callable[[Any, str], T]
"""``parse(value, path)`` → the typed value, or :func:`fail`."""


def _quote(value: object) -> str:
    """``repr(value)``, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def fail(path: str, problem: str, value: Any = None) -> NoReturn:
    raise SchemaError(path, problem, value)


def mapping(value: Any, path: str, known: tuple[str, ...] = ()) -> dict[Any, Any]:
    """``value`` as a mapping, refusing keys outside ``known`` (if given)."""
    if not isinstance(value, dict):
        fail(path, f"expected a mapping, got {type(value).__name__} {_quote(value)}", value)
    if known:
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            fail(path, f"unknown field(s) {', '.join(unknown)} (known: {', '.join(known)})", value)
    return value


# ---- parsers ----------------------------------------------------------------------------------

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$")
_MAX_DURATION_MS = 10 * 86_400_000


def parse_duration(value: Any, path: str) -> int:
    """``"500ms"`` → 500, ``"2m"`` → 120000, ``3`` → 3000 (a number is seconds); 0 to 10 days."""
    if isinstance(value, bool):
        fail(path, f"expected a duration like '20s', got {value!r}", value)
    if isinstance(value, (int, float)):
        ms = float(value) * 1000
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        ms = float(m.group(1)) * _UNITS[m.group(2)]
    else:
        fail(path, f"expected a duration like '500ms', '20s', '10m' or '1h', got {value!r}", value)
    if not ms >= 0 or ms != ms or ms > _MAX_DURATION_MS:  # NaN, negative, more than 10 days
        fail(path, f"duration must be between 0 and 10 days, got {value!r}", value)
    return round(ms)


def duration(*, positive: bool = False) -> Parser[int]:
    """A duration in ms (:func:`parse_duration`); ``positive`` refuses 0."""
    if not positive:
        return parse_duration

    def parse(value: Any, path: str) -> int:
        ms = parse_duration(value, path)
        if ms <= 0:
            fail(path, "must be positive", value)
        return ms

    return parse


def number(*, minimum: float = 0.0, maximum: float = 1e9) -> Parser[float]:
    def parse(value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not minimum <= value <= maximum:
            fail(path, f"expected a number in [{minimum:g}, {maximum:g}], got {value!r}", value)
        return float(value)

    return parse


def integer(*, minimum: int = 0, maximum: int = 1_000_000) -> Parser[int]:
    def parse(value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            fail(path, f"expected an integer in [{minimum}, {maximum}], got {value!r}", value)
        return value

    return parse


def text(*choices: str) -> Parser[str]:
    """A non-empty string, one of ``choices`` if given."""

    def parse(value: Any, path: str) -> str:
        if not isinstance(value, str) or not value or (choices and value not in choices):
            expected = f"one of {', '.join(choices)}" if choices else "a non-empty string"
            fail(path, f"expected {expected}, got {value!r}", value)
        return value

    return parse


def flag(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        fail(path, f"expected true or false, got {value!r}", value)
    return value


def optional(parse: Parser[T]) -> Parser[T | None]:
    """``null`` is a value (``None``) rather than "use the default"; see :attr:`Key.null`."""

    def parse_optional(value: Any, path: str) -> T | None:
        return None if value is None else parse(value, path)

    return parse_optional


# ---- schemas ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Key(Generic[T]):
    """One key of a mapping: the attribute it fills, its parser, whether it must be there, and
    whether an explicit ``null`` is passed to the parser (else ``null`` means absent)."""

    attribute: str
    parse: Parser[T]
    required: bool = False
    null: bool = False


class Schema(Generic[T]):
    """``Schema(Target, {key: Key(...)})``; ``shorthand`` names the key a bare string stands for
    (``join: 10.0.0.9@9`` ≡ ``join: {id: 10.0.0.9@9}``)."""

    def __init__(self, target: Callable[..., T], keys: Mapping[str, Key[Any]], *, shorthand: str | None = None) -> None:
        self.target, self.keys, self.shorthand = target, dict(keys), shorthand
        self.known = tuple(self.keys)

    def read(self, data: Any, path: str, **defaults: Any) -> T:
        """Parse ``data`` at ``path``; ``defaults`` (by attribute) replace the target's own."""
        if self.shorthand is not None and isinstance(data, str):
            data = {self.shorthand: data}
        data = mapping(data, path, self.known)
        values = dict(defaults)
        for name, key in self.keys.items():
            if name in data and (data[name] is not None or key.null):
                values[key.attribute] = key.parse(data[name], f"{path}.{name}")
            elif key.required:
                fail(f"{path}.{name}", "missing")
        return self.target(**values)
