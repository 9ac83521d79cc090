"""``mqbalance snapshot --namesrv HOST:PORT[;HOST:PORT] -o fleet.json|DIR`` — read a live RocketMQ
cluster (topics, routes, groups, connections, reported strategies, committed offsets) into a
snapshot (:mod:`mqbalance.fleet.rocketmq.live`): JSON, or the Parquet layout for any other ``-o``.
``mqbalance snapshot --bootstrap HOST:PORT[,HOST:PORT] -o fleet.json`` reads a live Kafka cluster
instead (:mod:`mqbalance.fleet.kafka.live`), a secured one with ``--command-config FILE`` (a Kafka
client properties file: SASL PLAIN/SCRAM, TLS with PEM files). Brokers that did not answer are listed in the
snapshot and on stderr (exit 4 with ``--fail-on-partial``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqbalance.cli._common import (
    Command,
    add_command_config,
    add_lag_time_budget,
    add_live_options,
    add_quiet,
    at_least,
    command_config,
    request_timeout,
)
from mqbalance.cli._fleet import read_rocketmq, warn_partial
from mqbalance.exceptions import UsageError
from mqbalance.progress import Progress

if TYPE_CHECKING:
    from mqbalance.fleet import AnySnapshot

__all__ = ["COMMAND"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_live_options(p, required=False)
    p.add_argument(
        "--bootstrap",
        metavar="HOST:PORT[,HOST:PORT]",
        help="read the live Kafka cluster behind these brokers instead (kafka-python's admin client; -o must be .json)",
    )
    add_command_config(p, requires="with --bootstrap: ")
    p.add_argument(
        "--group",
        action="append",
        default=[],
        help="with --bootstrap: a consumer group to describe even if the broker does not list it (repeatable)",
    )
    p.add_argument(
        "-o", "--out", required=True, help="fleet.json (JSON) or a directory, e.g. fleet.parquet (Parquet layout)"
    )
    add_quiet(p)
    add_lag_time_budget(p)
    p.add_argument(
        "--fail-on-partial", action="store_true", help="exit 4 when some broker or request could not be read"
    )


def _check_out(out: Path) -> None:
    """``-o`` can be written: its parent directory exists (or is created) and is writable, and it is
    not a file where a directory goes or the other way round. An OSError names the path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if not os.access(out.parent, os.W_OK):
        raise UsageError(f"-o {out}: {out.parent} is not writable", str(out))
    if out.suffix.lower() == ".json" and out.is_dir():
        raise UsageError(f"-o {out}: is a directory, not a JSON file", str(out))
    if out.suffix.lower() != ".json" and out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: is a file, not a directory for the Parquet layout", str(out))


def run(args: argparse.Namespace) -> int:
    from mqbalance.fleet import read_summary, write_snapshot

    if bool(args.namesrv) == bool(args.bootstrap):
        raise UsageError("give --namesrv (RocketMQ) or --bootstrap (Kafka), one of them", args.namesrv)
    if args.group and not args.bootstrap:
        raise UsageError("--group goes with --bootstrap (a RocketMQ snapshot reads every group)", args.group)
    if args.command_config and not args.bootstrap:
        raise UsageError("--command-config goes with --bootstrap (a Kafka client properties file)", args.command_config)
    client_config = command_config(args) if args.bootstrap else {}
    timeout = request_timeout(args)
    at_least(args.lag_time_budget, 0, "--lag-time-budget")
    out = Path(args.out)
    if args.bootstrap and out.suffix.lower() != ".json":
        raise UsageError(f"-o {out}: a Kafka snapshot is written as JSON (-o fleet.json)", str(out))
    _check_out(out)  # before the cluster is read, which may take minutes
    say = Progress(quiet=args.quiet, stream=sys.stderr)
    data, snap = _read(args, timeout, say, client_config)  # validated before anything is written
    write_snapshot(data, snap, out)
    print(f"{out}: {read_summary(data, snap)}")
    warn_partial(snap)
    return 4 if args.fail_on_partial and snap.error_lines() else 0


def _read(
    args: argparse.Namespace, timeout: float, say: Progress, client_config: dict[str, Any]
) -> tuple[dict[str, Any], AnySnapshot]:
    """The live cluster's data as read, and the snapshot of it (the reader of ``--bootstrap``
    needs kafka-python, imported only then)."""
    if args.bootstrap:
        from mqbalance.fleet.kafka.live import read_kafka_cluster
        from mqbalance.fleet.kafka.snapshot import kafka_snapshot_from_dict

        data = read_kafka_cluster(
            args.bootstrap,
            timeout=timeout,
            groups=args.group,
            progress=say,
            lag_time_budget=args.lag_time_budget,
            client_config=client_config,
        )
        return data, kafka_snapshot_from_dict(data, f"kafka://{args.bootstrap}")
    return read_rocketmq(args, timeout, say, args.lag_time_budget)


COMMAND = Command(
    "snapshot",
    "read a live RocketMQ cluster (--namesrv) or Kafka cluster (--bootstrap) into a snapshot file",
    add_arguments,
    run,
)
