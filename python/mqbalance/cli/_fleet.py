"""The fleet a command works on — a snapshot file (either kind), a live RocketMQ cluster
(``--namesrv``) or the bundled example — and what ``assign``, ``audit`` and ``snapshot`` share.
The fleet modules (Arrow) are imported when a command runs, not when the parser is built."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from mqbalance.cli._common import acl_credentials, add_live_options, request_timeout, warn
from mqbalance.exceptions import UsageError
from mqbalance.progress import Progress

if TYPE_CHECKING:
    from mqbalance.fleet.findings import AuditResult
    from mqbalance.fleet.kafka_snapshot import KafkaSnapshot
    from mqbalance.fleet.snapshot import Snapshot


def add_fleet_input(p: argparse.ArgumentParser) -> None:
    """``SNAPSHOT`` (optional: the bundled example), ``--namesrv`` and its options, ``--seed``."""
    p.add_argument(
        "snapshot", nargs="?", help="snapshot JSON file or Parquet directory (default: the bundled example fleet)"
    )
    add_live_options(p, required=False)


def example(seed: int) -> tuple[Snapshot, Snapshot]:
    """The bundled example fleet: (current, previous)."""
    from mqbalance.fleet.example import example_pair
    from mqbalance.fleet.snapshot import snapshot_from_dict

    previous, current = example_pair(seed)
    return snapshot_from_dict(current, f"example fleet (seed {seed})"), snapshot_from_dict(
        previous, f"example fleet before changes (seed {seed})"
    )


def warn_partial(snap: Snapshot | KafkaSnapshot) -> None:
    lines = snap.error_lines()
    if lines:
        warn(f"{snap.source} is partial, {len(lines)} read error(s):", lines)


def live(args: argparse.Namespace, say: Progress) -> Snapshot:
    """The live snapshot of ``--namesrv``; its read errors are printed on stderr."""
    from mqbalance.fleet.live import live_snapshot

    snap = live_snapshot(
        args.namesrv,
        timeout=request_timeout(args),
        running_info=not args.no_running_info,
        progress=say,
        credentials=acl_credentials(),
    )
    warn_partial(snap)
    return snap


def rocketmq_input(args: argparse.Namespace, say: Progress) -> Snapshot | None:
    """The RocketMQ snapshot of ``SNAPSHOT`` or ``--namesrv``; ``None`` when neither is given."""
    from mqbalance.fleet.snapshot import load_snapshot

    if args.namesrv and args.snapshot:
        raise UsageError("give a snapshot file or --namesrv, not both", args.snapshot)
    if args.namesrv:
        return live(args, say)
    if args.snapshot:
        snap = load_snapshot(args.snapshot)
        warn_partial(snap)
        return snap
    return None


def kafka_input(args: argparse.Namespace) -> KafkaSnapshot | None:
    """The Kafka snapshot named on the command line, or ``None`` for a RocketMQ one (or none)."""
    from mqbalance.fleet.kafka_snapshot import load_kafka_snapshot, snapshot_kind

    if not args.snapshot or snapshot_kind(args.snapshot) != "kafka":
        return None
    if args.namesrv:
        raise UsageError("give a snapshot file or --namesrv, not both", args.snapshot)
    snap = load_kafka_snapshot(args.snapshot)
    warn_partial(snap)
    return snap


def fail_on_exit(result: AuditResult, fail_on: list[str]) -> int:
    """Exit code 3, said on stderr, when the audit found a kind listed in ``--fail-on``."""
    failing = [k for k in fail_on if result.count(k)]
    if failing:
        print(f"failing on: {', '.join(failing)}", file=sys.stderr)
        return 3
    return 0
