"""The fleet a command works on — a snapshot file (either kind), a live RocketMQ cluster
(``--namesrv``) or the bundled example — and what ``assign``, ``audit`` and ``snapshot`` share.
The fleet modules (Arrow) are imported when a command runs, not when the parser is built."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from mqbalance.cli._common import acl_credentials, add_live_options, request_timeout, warn
from mqbalance.exceptions import UsageError
from mqbalance.progress import Progress

if TYPE_CHECKING:
    from mqbalance.fleet import AnySnapshot, AuditResult, Snapshot


def add_fleet_input(p: argparse.ArgumentParser) -> None:
    """``SNAPSHOT`` (optional: the bundled example), ``--namesrv`` and its options, ``--seed``."""
    p.add_argument(
        "snapshot", nargs="?", help="snapshot JSON file or Parquet directory (default: the bundled example fleet)"
    )
    add_live_options(p, required=False)


def example(seed: int) -> tuple[Snapshot, Snapshot]:
    """The bundled example fleet: (current, previous)."""
    from mqbalance.fleet import example_pair, snapshot_from_dict

    previous, current = example_pair(seed)
    return snapshot_from_dict(current, f"example fleet (seed {seed})"), snapshot_from_dict(
        previous, f"example fleet before changes (seed {seed})"
    )


def warn_partial(snap: AnySnapshot) -> None:
    lines = snap.error_lines()
    if lines:
        warn(f"{snap.source} is partial, {len(lines)} read error(s):", lines)


def read_rocketmq(
    args: argparse.Namespace, timeout: float, say: Progress, lag_time_budget: int | None
) -> tuple[dict[str, Any], Snapshot]:
    """The live RocketMQ cluster of ``--namesrv`` as read, and its snapshot; with
    ``lag_time_budget``, its lag seconds too (``lagTimes``: one ``GET_CONSUME_STATS`` per group
    and broker, then at most that many ``PULL_MESSAGE`` of one message, most lagging first; the
    reads that failed join the snapshot's errors)."""
    from mqbalance.fleet import snapshot_from_dict
    from mqbalance.fleet.rocketmq.lag_time import read_lag_times
    from mqbalance.fleet.rocketmq.live import read_cluster

    data = read_cluster(
        args.namesrv,
        timeout=timeout,
        running_info=not args.no_running_info,
        progress=say,
        credentials=acl_credentials(),
    )
    if lag_time_budget is not None:
        data["lagTimes"] = read_lag_times(data, timeout=timeout, budget=lag_time_budget)
        read = sum(1 for r in data["lagTimes"] if r["storeTimestamp"] is not None)
        say(f"lag seconds: {read:,} lagging queues read")
    return data, snapshot_from_dict(data, f"rocketmq://{args.namesrv}")


def fleet_input(args: argparse.Namespace, say: Progress, lag_time_budget: int | None = None) -> AnySnapshot | None:
    """The snapshot of ``SNAPSHOT`` (either kind) or ``--namesrv`` (read live, with lag seconds
    when ``lag_time_budget`` is given: :func:`read_rocketmq`; its read errors are printed on
    stderr); ``None`` when neither is given."""
    from mqbalance.fleet import load_any_snapshot

    if args.namesrv and args.snapshot:
        raise UsageError("give a snapshot file or --namesrv, not both", args.snapshot)
    snap: AnySnapshot
    if args.namesrv:
        snap = read_rocketmq(args, request_timeout(args), say, lag_time_budget)[1]
    elif args.snapshot:
        snap = load_any_snapshot(args.snapshot)
    else:
        return None
    warn_partial(snap)
    return snap


def fail_on_exit(result: AuditResult, fail_on: list[str]) -> int:
    """Exit code 3, said on stderr, when the audit found a kind listed in ``--fail-on``."""
    failing = [k for k in fail_on if result.count(k)]
    if failing:
        print(f"failing on: {', '.join(failing)}", file=sys.stderr)
        return 3
    return 0
