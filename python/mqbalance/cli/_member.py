"""The options the three member commands share (``zk-consume``, ``rocketmq-consume``,
``kafka-consume``: one group member each, run by :mod:`mqbalance.member_process`): ``--group``,
``--topic``, ``--client-id``, ``--record``, ``--duration``, ``--work-ms``, ``-v``."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqbalance._validate import number
from mqbalance.cli._common import duration_s


def add_member_options(
    p: argparse.ArgumentParser,
    *,
    topic_help: str = "a topic to consume (repeatable)",
    topic_type: Callable[[str], Any] | None = None,
    client_id_help: str,
    record_folder: str,
    work_help: str = "simulated processing time per batch",
) -> None:
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True, action="append", type=topic_type or str, help=topic_help)
    p.add_argument("--client-id", help=client_id_help)
    p.add_argument("--record", help=f"append-only record file (default: {record_folder}/<id>.jsonl)")
    p.add_argument("--duration", help="leave gracefully after this long: 90s, 5m, 2h or plain seconds")
    p.add_argument("--work-ms", type=float, default=0.0, help=work_help)
    p.add_argument("-v", "--verbose", action="store_true")


def member_settings(args: argparse.Namespace, record_folder: str, unnamed: str) -> tuple[Path, float | None]:
    """The record file (``--record``, else ``<record_folder>/<client id or unnamed>.jsonl``) and
    ``--duration`` in seconds; checks ``--work-ms`` and starts logging (``-v``: progress)."""
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(asctime)s %(message)s")
    number(args.work_ms, "--work-ms")
    duration = None if args.duration is None else duration_s(args.duration, "--duration")
    stem = (args.client_id or unnamed).replace("@", "_")
    return (Path(args.record) if args.record else Path(record_folder) / f"{stem}.jsonl"), duration
