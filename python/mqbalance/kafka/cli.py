"""``mqbalance kafka-consume`` (registered by :mod:`mqbalance.cli`).

``mqbalance kafka-consume --bootstrap HOST:PORT[,HOST:PORT] --group G --topic T [--topic ...]
--assignor range|roundrobin|sticky|cooperative-sticky [--impl mqbalance|kafka-python]
[--record FILE]`` runs one kafka-python consumer-group member on a real Kafka-protocol broker until
SIGTERM/SIGINT (or ``--duration``), recording what it was assigned and processed
(:mod:`.member`). Exit codes: 0 done, 2 bad input or no broker answering.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqbalance.kafka.assignors import ASSIGNORS

__all__ = ["add_subcommands"]


def _cmd_kafka_consume(args: argparse.Namespace) -> int:
    from mqbalance.kafka.member import KafkaMemberConfig, run_kafka_member

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(asctime)s %(message)s")
    cid = args.client_id
    record = Path(args.record) if args.record else Path("out/kafka-consumers") / f"{cid or 'consumer'}.jsonl"
    cfg = KafkaMemberConfig(
        bootstrap=args.bootstrap,
        group=args.group,
        topics=list(args.topic),
        records=record,
        assignor=args.assignor,
        implementation=args.impl,
        client_id=cid,
        duration=args.duration,
        work_ms=args.work_ms,
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        max_poll_interval_ms=args.max_poll_interval_ms,
        extra_topics=list(args.extra_topic or ()),
        connect_timeout=args.connect_timeout,
    )
    return run_kafka_member(cfg)


def add_subcommands(sub: Any) -> dict[str, Callable[[argparse.Namespace], int]]:
    """Add ``kafka-consume`` to the ``mqbalance`` sub-parsers; returns its handler."""
    c = sub.add_parser("kafka-consume", help="run one kafka-python consumer-group member with a chosen assignor")
    c.add_argument("--bootstrap", required=True, help="brokers, HOST:PORT[,HOST:PORT...]")
    c.add_argument("--group", required=True)
    c.add_argument("--topic", required=True, action="append", help="a topic to consume (repeatable)")
    c.add_argument("--assignor", default="range", choices=ASSIGNORS)
    c.add_argument(
        "--impl",
        default="mqbalance",
        choices=["mqbalance", "kafka-python"],
        help="whose assignor class: mqbalance's drop-in (default) or kafka-python's own",
    )
    c.add_argument("--extra-topic", action="append", help="a topic added to the subscription on SIGUSR1 (repeatable)")
    c.add_argument("--client-id", help="client id (default: mqbalance-PID)")
    c.add_argument("--record", help="append-only record file (default: out/kafka-consumers/<id>.jsonl)")
    c.add_argument("--duration", type=float, help="leave gracefully after this many seconds")
    c.add_argument("--work-ms", type=float, default=0.0, help="simulated processing time per batch")
    c.add_argument(
        "--connect-timeout", type=float, default=5.0, help="seconds for the brokers to answer at start (default 5)"
    )
    c.add_argument("--session-timeout-ms", type=int, default=6_000)
    c.add_argument("--heartbeat-interval-ms", type=int, default=500)
    c.add_argument("--max-poll-interval-ms", type=int, default=10_000)
    c.add_argument("-v", "--verbose", action="store_true")
    return {"kafka-consume": _cmd_kafka_consume}
