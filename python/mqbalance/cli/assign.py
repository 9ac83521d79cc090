"""``mqbalance assign [SNAPSHOT]`` — who consumes which queue, per group and topic, computed
in-process (no Spark) and summarised per (group, topic); either kind of snapshot, ``--namesrv`` or
the bundled example. Exit 3 with ``--fail-on-unowned`` when some queue is consumed by nobody."""

from __future__ import annotations

import argparse
import sys

from mqbalance.cli._common import Command, add_quiet, at_least
from mqbalance.cli._fleet import add_fleet_input, example, fleet_input
from mqbalance.progress import Progress

__all__ = ["COMMAND"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_fleet_input(p)
    p.add_argument("--fail-on-unowned", action="store_true", help="exit 3 when some queue is consumed by nobody")
    p.add_argument("--top", type=int, help="print only the N worst group/topic pairs (default: all, by name)")
    p.add_argument("--seed", type=int, default=7)
    add_quiet(p, "no progress lines (they go to standard error)")


def run(args: argparse.Namespace) -> int:
    from mqbalance.fleet import FindingKind, assignment_table, audit, describe

    at_least(args.top, 0, "--top")
    say = Progress(quiet=args.quiet, stream=sys.stderr)  # stdout is the table
    snap = fleet_input(args, say) or example(args.seed)[0]
    say(f"loaded {snap.source}: {describe(snap)}")
    with say.counter("assigning", "queues") as update:
        result = audit(snap, progress=update)
    table = assignment_table(snap, result)
    print(f"{snap.source}: {len(snap.groups)} groups")
    print(table.summary)
    print(table.header)
    print("-" * len(table.header))
    shown = table.shown(args.top)
    for line in shown:
        print(line.text)
    if len(shown) < len(table.lines):
        print(f"... {len(table.lines) - len(shown):,} more group/topic pairs (--top)")
    return 3 if args.fail_on_unowned and result.count(FindingKind.UNOWNED) else 0


COMMAND = Command("assign", "who consumes which queue, per group and topic, in-process", add_arguments, run)
