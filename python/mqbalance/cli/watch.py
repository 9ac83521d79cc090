"""``mqbalance watch (--namesrv HOST:PORT | --bootstrap HOST:PORT[,…]) --out DIR [--interval 10s]
[--offsets-interval 60s]`` — watch a live RocketMQ cluster (:mod:`mqbalance.history.collector`) or
Kafka cluster (:mod:`mqbalance.history.kafka_collector`) until stopped: every change of membership
and ownership, the generations and states, and the offsets, into a history dataset
(:mod:`mqbalance.history`), continued after a restart; Prometheus metrics with ``--metrics-port``."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from mqbalance.cli._common import (
    Command,
    add_command_config,
    add_live_options,
    add_quiet,
    at_least,
    command_config,
    duration_s,
    request_timeout,
)
from mqbalance.exceptions import UsageError
from mqbalance.progress import Progress
from mqbalance.signal_actions import signal_actions

__all__ = ["COMMAND"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_live_options(p, required=False)
    p.add_argument(
        "--bootstrap",
        metavar="HOST:PORT[,HOST:PORT]",
        help="watch the Kafka cluster behind these brokers (instead of --namesrv)",
    )
    add_command_config(p, requires="with --bootstrap: ")
    p.add_argument("--out", required=True, help="the history directory (created, or continued after a restart)")
    p.add_argument("--interval", default="10s", help="membership and ownership every (default: 10s)")
    p.add_argument("--offsets-interval", default="60s", help="committed and max offsets every (default: 60s)")
    p.add_argument("--checkpoint-every", default="1h", help="write the whole state every (default: 1h)")
    p.add_argument("--retain", default="7d", help="delete hours of history older than this (default: 7d)")
    p.add_argument(
        "--lag-time-budget",
        type=int,
        default=256,
        help="messages read per offsets tick for lag seconds, most-lagging queues first (default: 256)",
    )
    p.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port")
    p.add_argument("--metrics-addr", default="127.0.0.1", help="the address to serve them on (default: 127.0.0.1)")
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from mqbalance.history.collector import Collector
    from mqbalance.history.kafka_collector import KafkaCollector
    from mqbalance.history.metrics import WatchMetrics
    from mqbalance.history.ticking import ReadAbandoned, TickLoop

    if bool(args.namesrv) == bool(args.bootstrap):
        raise UsageError("give --namesrv (RocketMQ) or --bootstrap (Kafka), one of them", args.namesrv)
    if args.command_config and not args.bootstrap:
        raise UsageError("--command-config goes with --bootstrap (Kafka)", args.command_config)
    if args.bootstrap and args.no_running_info:
        raise UsageError("--no-running-info goes with --namesrv (RocketMQ)", args.bootstrap)
    at_least(args.lag_time_budget, 0, "--lag-time-budget")
    say = Progress(quiet=args.quiet, stream=sys.stderr)
    metrics = None
    if args.metrics_port is not None:
        if not 0 < args.metrics_port < 65536:
            raise UsageError(f"--metrics-port: must be 1-65535, got {args.metrics_port}", args.metrics_port)
        metrics = WatchMetrics()
    common = {
        "interval": duration_s(args.interval, "--interval"),
        "offsets_interval": duration_s(args.offsets_interval, "--offsets-interval"),
        "checkpoint_every": duration_s(args.checkpoint_every, "--checkpoint-every"),
        "retain": duration_s(args.retain, "--retain"),
        "timeout": request_timeout(args),
        "say": say,
        "metrics": metrics,
        "lag_time_budget": args.lag_time_budget,
    }
    collector: TickLoop
    if args.bootstrap:
        collector = KafkaCollector(args.bootstrap, args.out, client_config=command_config(args), **common)
    else:
        collector = Collector(args.namesrv, args.out, running_info=not args.no_running_info, **common)
    if metrics is not None:
        metrics.serve(args.metrics_port, args.metrics_addr)
        say(f"metrics on http://{args.metrics_addr}:{args.metrics_port}/metrics")
    stop = threading.Event()

    def give_up_read(_signum: int) -> None:
        if collector.reading:  # a read may wait a whole --timeout on a cluster that is down: give it up
            raise ReadAbandoned

    # stop.set runs on the signal thread: in the handler it could block on the lock stop.wait holds
    with signal_actions({signal.SIGINT: stop.set, signal.SIGTERM: stop.set}, interrupt=give_up_read):
        say(
            f"watching {args.bootstrap or args.namesrv} into {args.out} "
            f"(continuing after tick {collector.writer.last_tick})"
        )
        ticks = collector.run(stop)
    say(f"stopped after {ticks} tick(s); last tick {collector.writer.last_tick}")
    return 0


COMMAND = Command(
    "watch",
    "watch a live RocketMQ (--namesrv) or Kafka (--bootstrap) cluster: membership, ownership and "
    "generation changes into a history dataset",
    add_arguments,
    run,
)
