"""``mqbalance consume`` (registered by :mod:`mqbalance.cli`).

``mqbalance consume --namesrv HOST:PORT[;HOST:PORT] --group G --topic T [--topic ...] --strategy S
[--client-id ID] [--record FILE]`` runs one consumer-group member on a real RocketMQ cluster until
SIGTERM/SIGINT (or ``--duration``), recording what it processed (:mod:`.worker`). Exit codes: 0
done, 2 bad input, 4 refused to consume because its client id is in use (``--refuse-duplicate-id``).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqbalance._validate import number
from mqbalance.allocation.registry import StrategyName, Use, names_for
from mqbalance.exceptions import InvalidInputError
from mqbalance.remoting.client import check_timeout

__all__ = ["add_subcommands"]


def _cmd_consume(args: argparse.Namespace) -> int:
    from mqbalance.rocketmq.worker import MemberConfig, run_member

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(asctime)s %(message)s")
    for name in ("heartbeat_interval_ms", "persist_interval_ms", "rebalance_interval_ms"):
        if getattr(args, name) <= 0:
            value = getattr(args, name)
            raise InvalidInputError(f"--{name.replace('_', '-')} must be > 0, got {value}", value)
    check_timeout(args.timeout, "--timeout")
    if args.duration is not None:
        number(args.duration, "--duration", positive=True)
    number(args.work_ms, "--work-ms")
    cid = args.client_id
    record = (
        Path(args.record) if args.record else Path("out/consumers") / f"{(cid or 'consumer').replace('@', '_')}.jsonl"
    )
    cfg = MemberConfig(
        namesrv=args.namesrv,
        group=args.group,
        topics=list(args.topic),
        records=record,
        strategy=args.strategy,
        client_id=cid,
        semantics=args.semantics,
        consume_from=args.consume_from,
        refuse_duplicate_id=args.refuse_duplicate_id,
        duration=args.duration,
        work_ms=args.work_ms,
        timeout=args.timeout,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        persist_interval_ms=args.persist_interval_ms,
        rebalance_interval_ms=args.rebalance_interval_ms,
    )
    return run_member(cfg)


def add_subcommands(sub: Any) -> dict[str, Callable[[argparse.Namespace], int]]:
    """Add ``consume`` to the ``mqbalance`` sub-parsers; returns its handler."""
    c = sub.add_parser("consume", help="run one consumer-group member on a real RocketMQ cluster")
    c.add_argument("--namesrv", required=True, help="name servers, HOST:PORT[;HOST:PORT...]")
    c.add_argument("--group", required=True)
    c.add_argument("--topic", required=True, action="append", help="a topic to consume (repeatable)")
    c.add_argument("--strategy", default=StrategyName.AVG.value, help=", ".join(names_for(Use.ROCKETMQ_CLIENT)))
    c.add_argument("--client-id", help="client id (default: IP@PID, as RocketMQ builds it)")
    c.add_argument("--record", help="append-only record file (default: out/consumers/<id>.jsonl)")
    c.add_argument("--semantics", default="5.x", choices=["4.x", "5.x"], help="client generation (default 5.x)")
    c.add_argument(
        "--from",
        dest="consume_from",
        default="last",
        choices=["last", "first"],
        help="where a queue without a committed offset starts (CONSUME_FROM_LAST_OFFSET / _FIRST_OFFSET)",
    )
    c.add_argument(
        "--refuse-duplicate-id",
        action="store_true",
        help="when another process uses this client id as this one joins, leave and exit 4 instead of consuming",
    )
    c.add_argument("--duration", type=float, help="leave gracefully after this many seconds")
    c.add_argument("--work-ms", type=float, default=0.0, help="simulated processing time per pulled batch")
    c.add_argument("--timeout", type=float, default=3.0, help="seconds per request")
    c.add_argument("--heartbeat-interval-ms", type=int, default=30_000)
    c.add_argument("--persist-interval-ms", type=int, default=5_000)
    c.add_argument("--rebalance-interval-ms", type=int, default=20_000)
    c.add_argument("-v", "--verbose", action="store_true")
    return {"consume": _cmd_consume}
