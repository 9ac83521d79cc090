"""The record files members append to (``mqbalance member`` on ZooKeeper, ``mqbalance consume``
on RocketMQ): one JSON object per line, read back for the checks of
:mod:`mqbalance.coordination.records` and :mod:`mqbalance.rocketmq.records`.

>>> import tempfile, pathlib
>>> f = pathlib.Path(tempfile.mkdtemp()) / "m1.jsonl"
>>> _ = f.write_text('{"e": "p", "q": "b/T/0", "a": 0, "b": 5}' + chr(10) + '{"e": "p", "q"')  # torn by a kill -9
>>> load_records([f])
{'m1': [{'e': 'p', 'q': 'b/T/0', 'a': 0, 'b': 5}]}
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mqbalance import _validate
from mqbalance.exceptions import InvalidInputError

__all__ = ["load_records"]


def load_records(paths: Iterable[Path | str]) -> dict[str, list[dict[str, Any]]]:
    """``{file stem: [record, ...]}``; a torn last line (``kill -9`` mid-write) is ignored. A file
    that cannot be read, is not UTF-8, or holds a line that is not a JSON object (other than a torn
    last one) is an :class:`~mqbalance.exceptions.InvalidInputError` naming the file and the line."""
    if isinstance(paths, (str, bytes, os.PathLike)) or not isinstance(paths, Iterable):
        raise InvalidInputError(
            f"paths must be a sequence of record file paths, not a single {type(paths).__name__} {paths!r:.80}", paths
        )
    out: dict[str, list[dict[str, Any]]] = {}
    for i, p in enumerate(list(paths)):
        fs = os.fspath(p) if isinstance(p, (str, os.PathLike)) else None
        if not isinstance(fs, str):
            raise InvalidInputError(f"paths[{i}] must be a str or a path, got {type(p).__name__} {p!r:.80}", p)
        name = _validate.text(fs, f"paths[{i}]")
        try:
            lines = Path(name).read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as e:
            raise InvalidInputError(f"record file {name!r}: not UTF-8 text (byte {e.start})", str(p)) from None
        except (OSError, ValueError) as e:  # missing, a directory, a NUL in the name
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise InvalidInputError(f"record file {name!r}: cannot read: {reason}", str(p)) from None
        rows = []
        for n, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):
                if n == len(lines):  # torn by a kill -9 mid-write
                    continue
                raise InvalidInputError(f"record file {name!r}: line {n} is not JSON: {line[:60]!r}", str(p)) from None
            if not isinstance(row, dict):
                raise InvalidInputError(f"record file {name!r}: line {n} is not a JSON object: {line[:60]!r}", str(p))
            rows.append(row)
        out[Path(name).stem] = rows
    return out
