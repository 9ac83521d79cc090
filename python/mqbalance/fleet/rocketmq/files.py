"""RocketMQ snapshot files: :func:`load_snapshot` reads a JSON file or a Parquet directory,
:func:`write_parquet` writes the Parquet layout (see :mod:`mqbalance.fleet.rocketmq.snapshot`).
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from mqbalance import _core
from mqbalance.exceptions import SnapshotError
from mqbalance.fleet.rocketmq.checks import field_error, first_line, no_duplicate_keys
from mqbalance.fleet.rocketmq.from_arrow import columnar_tables, columns_of, validate_tables
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict, snapshot_from_json_bytes
from mqbalance.fleet.rocketmq.snapshot import OPTIONAL_TABLES, REQUIRED, SCHEMAS, Snapshot, strategy_codes, table_of

__all__ = ["load_snapshot", "write_parquet"]


def _read_arrow(path: Path, name: str) -> pa.Table:
    """A snapshot table as stored, its required columns checked."""
    if not path.exists():
        raise field_error(str(path), "missing table", str(path))
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as e:
        raise field_error(str(path), f"not a readable Parquet file: {first_line(e)}", str(path)) from None
    for c in REQUIRED[name]:
        if c not in table.column_names:
            raise field_error(str(path), f"missing column {c!r}", c)
    return table


def _read_parquet(path: Path, name: str) -> dict[str, list[Any]]:
    return columns_of(_read_arrow(path, name), name)


def load_snapshot(path: str | Path) -> Snapshot:
    """Load a JSON snapshot file or a Parquet snapshot directory.

    A JSON file is read by the Rust reader (connections straight into columns); a text it is not
    sure of is parsed with ``json`` and checked entry by entry, which names any problem."""
    if not isinstance(path, (str, Path)) or "\x00" in str(path):
        raise SnapshotError(f"a snapshot path must be a str or Path (without NUL), got {path!r}", path)
    p = Path(path)
    try:
        os.fsencode(p)
    except UnicodeEncodeError:
        raise SnapshotError(f"a snapshot path that no file system can hold: {path!r}", path) from None
    if p.is_dir():
        raw = {
            name: _read_arrow(p / f"{name}.parquet", name) for name in ("queue_data", "connections", "subscriptions")
        }
        extra = {
            name: _read_parquet(p / f"{name}.parquet", name)
            if (p / f"{name}.parquet").exists()
            else {c: [] for c in SCHEMAS[name].names}
            for name in OPTIONAL_TABLES
        }
        fast = columnar_tables(str(p), raw)
        if fast is None:  # some row is bad (or of an unusual type): the row-by-row path names it
            qd, cn, sb = (columns_of(raw[name], name) for name in ("queue_data", "connections", "subscriptions"))
            codes, specs = strategy_codes(validate_tables(str(p), qd, cn, sb))
            tables = (table_of("queue_data", qd), table_of("connections", cn), table_of("subscriptions", sb))
        else:
            *tables, codes, specs = fast  # type: ignore[assignment]
        return Snapshot(
            str(p),
            *tables,
            table_of("brokers", extra["brokers"]),
            codes,
            specs,
            table_of("offsets", extra["offsets"]),
            table_of("errors", extra["errors"]),
            table_of("lag_times", extra["lag_times"]),
        )
    with gc_paused():
        try:
            content: bytes | None = p.read_bytes()
        except OSError:
            content = None  # read again below, which names the problem
        read = snapshot_from_json_bytes(content, str(p)) if content is not None else None
    if read is not None:
        return read
    # The reader was unsure (malformed, odd or wrong): the reference path names the problem.
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise field_error(str(p), f"cannot read: {e.strerror or e}", str(p)) from None
    except UnicodeDecodeError as e:
        bad = e.object[e.start : e.start + 1]
        message = f"not UTF-8 text (byte {e.start}: {bad!r}); a snapshot is a UTF-8 JSON file or a Parquet directory"
        raise field_error(str(p), message, str(p)) from None
    with gc_paused():
        try:
            data = parse_json(text)
        except SnapshotError as e:
            raise field_error(str(p), str(e), e.value) from None
        except (ValueError, RecursionError) as e:  # JSONDecodeError, a 5000-digit number, deep nesting
            raise field_error(str(p), f"not valid JSON: {first_line(e)}", str(p)) from None
        return snapshot_from_dict(data, str(p))


def parse_json(text: str) -> Any:
    """``json.loads(text)``, refusing an object that repeats a key (:class:`SnapshotError`).

    The keys are checked by a quick pass in Rust first; only a text it cannot clear (a duplicate,
    an escaped key, malformed JSON) is parsed with the key-checking hook, which names the key or
    lets ``json`` name the error: a hook call per object costs a third of the parse.

    >>> parse_json('{"a": {"b": 1}}')
    {'a': {'b': 1}}
    >>> parse_json('{"a": 1, "a": 2}')
    Traceback (most recent call last):
    mqbalance.exceptions.SnapshotError: duplicate key 'a'
    """
    if _core.json_keys(text) == "distinct":
        return json.loads(text)
    return json.loads(text, object_pairs_hook=no_duplicate_keys)


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a snapshot is parsed and columned: its millions of
    new dicts and lists form no cycle, yet each collection would walk all of them (a tenth of a
    10^6-connection load)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def write_parquet(snapshot: Snapshot, directory: str | Path) -> Path:
    """Write a snapshot in the Parquet layout."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for name, table in snapshot.to_arrow().items():
        pq.write_table(table, d / f"{name}.parquet")
    return d
