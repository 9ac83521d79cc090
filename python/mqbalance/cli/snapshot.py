"""``mqbalance snapshot --namesrv HOST:PORT[;HOST:PORT] -o fleet.json|DIR`` — read a live RocketMQ
cluster (topics, routes, groups, connections, reported strategies, committed offsets) into a
snapshot (:mod:`mqbalance.fleet.live`): JSON, or the Parquet layout for any other ``-o``.
``mqbalance snapshot --bootstrap HOST:PORT[,HOST:PORT] -o fleet.json`` reads a live Kafka cluster
instead (:mod:`mqbalance.fleet.kafka_live`). Brokers that did not answer are listed in the
snapshot and on stderr (exit 4 with ``--fail-on-partial``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from mqbalance.cli._common import Command, acl_credentials, add_live_options, add_quiet, request_timeout
from mqbalance.cli._fleet import warn_partial
from mqbalance.exceptions import UsageError
from mqbalance.progress import Progress

__all__ = ["COMMAND"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_live_options(p, required=False)
    p.add_argument(
        "--bootstrap",
        metavar="HOST:PORT[,HOST:PORT]",
        help="read the live Kafka cluster behind these brokers instead (kafka-python's admin client; -o must be .json)",
    )
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
    from mqbalance.fleet.live import read_cluster
    from mqbalance.fleet.snapshot import snapshot_from_dict, write_parquet

    if bool(args.namesrv) == bool(args.bootstrap):
        raise UsageError("give --namesrv (RocketMQ) or --bootstrap (Kafka), one of them", args.namesrv)
    timeout = request_timeout(args)
    out = Path(args.out)
    _check_out(out)  # before the cluster is read, which may take minutes
    say = Progress(quiet=args.quiet, stream=sys.stderr)
    if args.bootstrap:
        return _kafka_snapshot(args, out, timeout, say)
    if args.group:
        raise UsageError("--group goes with --bootstrap (a RocketMQ snapshot reads every group)", args.group)
    data = read_cluster(
        args.namesrv,
        timeout=timeout,
        running_info=not args.no_running_info,
        progress=say,
        credentials=acl_credentials(),
    )
    snap = snapshot_from_dict(data, f"rocketmq://{args.namesrv}")  # validated before anything is written
    if out.suffix.lower() == ".json":
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        write_parquet(snap, out)
    print(
        f"{out}: {len(data['topics']):,} topics, {snap.readable_queue_count():,} readable queues, "
        f"{len(data['groups']):,} groups online ({data['meta']['groupsOffline']:,} offline), "
        f"{snap.connections.num_rows:,} connections, {snap.offsets.num_rows:,} committed offsets"
    )
    warn_partial(snap)
    return 4 if args.fail_on_partial and snap.errors.num_rows else 0


def _kafka_snapshot(args: argparse.Namespace, out: Path, timeout: float, say: Progress) -> int:
    from mqbalance.fleet.kafka_live import read_kafka_cluster
    from mqbalance.fleet.kafka_snapshot import kafka_snapshot_from_dict

    if out.suffix.lower() != ".json":
        raise UsageError(f"-o {out}: a Kafka snapshot is written as JSON (-o fleet.json)", str(out))
    data = read_kafka_cluster(args.bootstrap, timeout=timeout, groups=args.group, progress=say)
    snap = kafka_snapshot_from_dict(data, f"kafka://{args.bootstrap}")  # validated before anything is written
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    members = sum(len(g.members) for g in snap.groups.values())
    print(
        f"{out}: {len(snap.topics):,} topics, {snap.partition_count():,} partitions, {len(snap.groups):,} groups, "
        f"{members:,} members, {len(snap.committed):,} committed offsets"
    )
    warn_partial(snap)
    return 4 if args.fail_on_partial and snap.errors else 0


COMMAND = Command(
    "snapshot",
    "read a live RocketMQ cluster (--namesrv) or Kafka cluster (--bootstrap) into a snapshot file",
    add_arguments,
    run,
)
