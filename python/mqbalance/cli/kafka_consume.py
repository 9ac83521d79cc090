"""``mqbalance kafka-consume --bootstrap HOST:PORT[,HOST:PORT] --group G --topic T [--topic ...]
--assignor range|roundrobin|sticky|cooperative-sticky [--impl mqbalance|kafka-python]
[--record FILE] [--command-config FILE]`` — one kafka-python consumer-group member on a real Kafka-protocol broker
(:mod:`mqbalance.kafka.member`) until SIGTERM/SIGINT (or ``--duration``), recording what it was
assigned and processed; SIGUSR1 adds ``--extra-topic`` to its subscription."""

from __future__ import annotations

import argparse

from mqbalance.cli._common import Command, add_command_config, command_config
from mqbalance.cli._member import add_member_options, member_settings

__all__ = ["COMMAND"]

RECORDS = "out/kafka-consumers"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from mqbalance.kafka.member import ASSIGNOR_CLASSES, IMPLEMENTATIONS

    p.add_argument("--bootstrap", required=True, help="brokers, HOST:PORT[,HOST:PORT...]")
    add_command_config(p)
    add_member_options(p, client_id_help="client id (default: mqbalance-PID)", record_folder=RECORDS)
    p.add_argument("--assignor", default="range", choices=list(ASSIGNOR_CLASSES[IMPLEMENTATIONS[0]]))
    p.add_argument(
        "--impl",
        default="mqbalance",
        choices=IMPLEMENTATIONS,
        help="whose assignor class: mqbalance's drop-in (default) or kafka-python's own",
    )
    p.add_argument("--extra-topic", action="append", help="a topic added to the subscription on SIGUSR1 (repeatable)")
    p.add_argument(
        "--connect-timeout", type=float, default=5.0, help="seconds for the brokers to answer at start (default 5)"
    )
    p.add_argument("--session-timeout-ms", type=int, default=6_000)
    p.add_argument("--heartbeat-interval-ms", type=int, default=500)
    p.add_argument("--max-poll-interval-ms", type=int, default=10_000)


def run(args: argparse.Namespace) -> int:
    from mqbalance.kafka.member import KafkaMemberConfig, run_kafka_member

    records, duration = member_settings(args, RECORDS, "consumer")
    cfg = KafkaMemberConfig(
        bootstrap=args.bootstrap,
        group=args.group,
        topics=list(args.topic),
        records=records,
        assignor=args.assignor,
        implementation=args.impl,
        client_id=args.client_id,
        duration=duration,
        work_ms=args.work_ms,
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        max_poll_interval_ms=args.max_poll_interval_ms,
        extra_topics=list(args.extra_topic or ()),
        connect_timeout=args.connect_timeout,
        client_config=command_config(args),
    )
    return run_kafka_member(cfg)


COMMAND = Command(
    "kafka-consume", "run one kafka-python consumer-group member with a chosen assignor", add_arguments, run
)
