"""``mqbalance rocketmq-consume --namesrv HOST:PORT[;HOST:PORT] --group G --topic T [--topic ...]
--strategy S [--idcs ROOMS] [--client-id ID] [--record FILE]`` — one consumer-group member on a real RocketMQ
cluster (:mod:`mqbalance.rocketmq.worker`) until SIGTERM/SIGINT (or ``--duration``), recording
what it processed. Exit 4 when it refused to consume because its client id is in use
(``--refuse-duplicate-id``)."""

from __future__ import annotations

import argparse

from mqbalance.allocation.registry import StrategyName, Use, names_for
from mqbalance.cli._common import Command
from mqbalance.cli._member import add_member_options, member_settings
from mqbalance.exceptions import UsageError

__all__ = ["COMMAND"]

RECORDS = "out/consumers"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--namesrv", required=True, help="name servers, HOST:PORT[;HOST:PORT...]")
    add_member_options(
        p,
        client_id_help="client id (default: IP@PID, as RocketMQ builds it)",
        record_folder=RECORDS,
        work_help="simulated processing time per pulled batch",
    )
    p.add_argument("--strategy", default=StrategyName.AVG.value, help=", ".join(names_for(Use.ROCKETMQ_CLIENT)))
    p.add_argument(
        "--idcs",
        metavar="ROOM[,ROOM...]",
        help="MACHINE_ROOM: the machine rooms this consumer serves (Java's consumeridcs; a broker's room is "
        "its name before '@')",
    )
    p.add_argument("--semantics", default="5.x", choices=["4.x", "5.x"], help="client generation (default 5.x)")
    p.add_argument(
        "--from",
        dest="consume_from",
        default="last",
        choices=["last", "first"],
        help="where a queue without a committed offset starts (CONSUME_FROM_LAST_OFFSET / _FIRST_OFFSET)",
    )
    p.add_argument(
        "--refuse-duplicate-id",
        action="store_true",
        help="when another process uses this client id as this one joins, leave and exit 4 instead of consuming",
    )
    p.add_argument("--timeout", type=float, default=3.0, help="seconds per request")
    p.add_argument("--heartbeat-interval-ms", type=int, default=30_000)
    p.add_argument("--persist-interval-ms", type=int, default=5_000)
    p.add_argument("--rebalance-interval-ms", type=int, default=20_000)


def run(args: argparse.Namespace) -> int:
    from mqbalance.remoting.client import check_timeout
    from mqbalance.rocketmq.worker import RocketMQMemberConfig, run_rocketmq_member

    records, duration = member_settings(args, RECORDS, "consumer")
    for name in ("heartbeat_interval_ms", "persist_interval_ms", "rebalance_interval_ms"):
        if getattr(args, name) <= 0:
            value = getattr(args, name)
            raise UsageError(f"--{name.replace('_', '-')} must be > 0, got {value}", value)
    check_timeout(args.timeout, "--timeout")
    cfg = RocketMQMemberConfig(
        namesrv=args.namesrv,
        group=args.group,
        topics=list(args.topic),
        records=records,
        strategy=args.strategy,
        strategy_params={} if args.idcs is None else {"consumeridcs": [r for r in args.idcs.split(",") if r]},
        client_id=args.client_id,
        semantics=args.semantics,
        consume_from=args.consume_from,
        refuse_duplicate_id=args.refuse_duplicate_id,
        duration=duration,
        work_ms=args.work_ms,
        timeout=args.timeout,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        persist_interval_ms=args.persist_interval_ms,
        rebalance_interval_ms=args.rebalance_interval_ms,
    )
    return run_rocketmq_member(cfg)


COMMAND = Command("rocketmq-consume", "run one consumer-group member on a real RocketMQ cluster", add_arguments, run)
