"""``mqbalance fault-latency-demo [--rounds N]`` — the two-broker latency experiment: how the
producer's ``MQFaultStrategy`` isolates slow brokers, pre-4.9 loop vs 4.x vs 5.x
(:mod:`mqbalance.fault.demo`)."""

from __future__ import annotations

import argparse

from mqbalance.cli._common import Command
from mqbalance.exceptions import UsageError

__all__ = ["COMMAND"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rounds", type=int, default=10, help="rounds of sending (default: 10)")


def run(args: argparse.Namespace) -> int:
    from mqbalance.fault.demo import print_demo

    if not 1 <= args.rounds <= 1_000_000:
        raise UsageError(f"--rounds: must be between 1 and 1000000, got {args.rounds}", args.rounds)
    print_demo(args.rounds)
    return 0


COMMAND = Command(
    "fault-latency-demo",
    "the two-broker latency experiment: producer fault isolation (MQFaultStrategy), pre-4.9 vs 4.x vs 5.x",
    add_arguments,
    run,
)
