"""``mqbalance assign [SNAPSHOT]`` — who consumes which queue, per group and topic, computed
in-process (no Spark) and summarised per (group, topic); either kind of snapshot, ``--namesrv`` or
the bundled example. Exit 3 with ``--fail-on-unowned`` when some queue is consumed by nobody."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from mqbalance.cli._common import Command, add_quiet, at_least
from mqbalance.cli._fleet import add_fleet_input, example, kafka_input, rocketmq_input
from mqbalance.progress import Progress

if TYPE_CHECKING:
    from mqbalance.fleet.kafka_snapshot import KafkaSnapshot

__all__ = ["COMMAND"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_fleet_input(p)
    p.add_argument("--fail-on-unowned", action="store_true", help="exit 3 when some queue is consumed by nobody")
    p.add_argument("--top", type=int, help="print only the N worst group/topic pairs (default: all, by name)")
    p.add_argument("--seed", type=int, default=7)
    add_quiet(p, "no progress lines (they go to standard error)")


def run(args: argparse.Namespace) -> int:
    from mqbalance.fleet import FindingKind, audit_snapshot

    at_least(args.top, 0, "--top")
    kafka = kafka_input(args)
    if kafka is not None:
        return _assign_kafka(args, kafka)
    say = Progress(quiet=args.quiet, stream=sys.stderr)  # stdout is the table
    snap = rocketmq_input(args, say) or example(args.seed)[0]
    say(f"loaded {snap.source}: {len(snap.groups):,} groups, {snap.readable_queue_count():,} readable queues")
    with say.counter("assigning", "queues") as update:
        result = audit_snapshot(snap, progress=update)
    rows = {(r.group, r.topic): r for r in result.rows}
    groups = snap.consumer_groups()
    lines = []  # (queues at risk, idle, missing route, group, topic, line)
    for g, t in snap.subscription_pairs():
        group = groups.get(g)
        procs = len(group.connections) if group else 0
        row = rows.get((g, t))
        if row is None:
            note = "no readable queue (missing route)"
            lines.append((0, 0, 1, g, t, f"{g:<20} {t:<22} {0:>6} {procs:>5} {'':>4} {'':>4} {'':>7} {'':>7}  {note}"))
            continue
        notes = []
        if group and group.duplicated_ids:
            notes.append(f"duplicated id {', '.join(group.duplicated_ids)}")
        if row.unowned:
            notes.append(f"{row.unowned} queues consumed by nobody")
        if row.double_owned and row.message_model == "CLUSTERING":
            notes.append(f"{row.double_owned} consumed twice")
        if row.idle_processes and row.message_model == "CLUSTERING":
            notes.append(f"{row.idle_processes} idle")
        risk = row.unowned + (row.double_owned if row.message_model == "CLUSTERING" else 0)
        idle = row.idle_processes if row.message_model == "CLUSTERING" else 0
        line = (
            f"{g:<20} {t:<22} {row.queues:>6} {procs:>5} {row.min_per_process:>4} {row.max_per_process:>4} "
            f"{row.unowned:>7} {row.double_owned:>7}  {'; '.join(notes)}"
        )
        lines.append((risk, idle, 0, g, t, line))
    print(f"{snap.source}: {len(snap.groups)} groups")
    totals = result.totals
    print(
        f"fleet: {totals['queues_assigned']:,} queues in {totals['group_topics']:,} group/topic pairs, "
        f"{totals['processes']:,} processes; unowned {totals['unowned_queues']:,}, consumed twice "
        f"{totals['double_owned_queues']:,}, idle processes {totals['idle_processes']:,}, duplicated ids "
        f"{totals['duplicated_client_ids']:,}, missing routes {totals['missing_routes']:,}"
    )
    columns = f"{'queues':>6} {'procs':>5} {'min':>4} {'max':>4} {'unowned':>7} {'twice':>7}"
    header = f"{'group':<20} {'topic':<22} {columns}  notes"
    print(header)
    print("-" * len(header))
    if args.top is None:
        shown = sorted(lines, key=lambda x: (x[3], x[4]))
    else:  # the worst first: queues at risk, then idle processes, then missing routes
        shown = sorted(lines, key=lambda x: (-x[0], -x[1], -x[2], x[3], x[4]))[: args.top]
    for *_, line in shown:
        print(line)
    if len(shown) < len(lines):
        print(f"... {len(lines) - len(shown):,} more group/topic pairs (--top)")
    return 3 if args.fail_on_unowned and result.count(FindingKind.UNOWNED) else 0


def _assign_kafka(args: argparse.Namespace, snap: KafkaSnapshot) -> int:
    from mqbalance.fleet import FindingKind
    from mqbalance.fleet.kafka_audit import audit_kafka

    result = audit_kafka(snap, what_if=())
    print(f"{snap.source}: {len(snap.groups)} groups")
    t = result.totals
    print(
        f"fleet: {t['queues_assigned']:,} partitions in {t['group_topics']:,} group/topic pairs, "
        f"{t['processes']:,} members; assigned to nobody {t['unowned_queues']:,}, twice {t['double_owned_queues']:,}, "
        f"idle members {t['idle_processes']:,}, lag {t['lag']:,}, rebalancing groups {t['rebalancing_groups']:,}"
    )
    header = (
        f"{'group':<20} {'topic':<22} {'parts':>6} {'membrs':>6} {'min':>4} {'max':>4} {'nobody':>7} {'twice':>6} "
        f"{'lag':>10}  notes"
    )
    print(header)
    print("-" * len(header))
    groups = snap.groups
    lines = []
    for r in result.rows:
        notes = []
        group = groups[r.group]
        if not group.stable:
            notes.append(group.state)
        if group.members and not group.metadata_known:
            notes.append("members' assignments not returned by the broker")
        if r.idle_processes:
            notes.append(f"{r.idle_processes} idle")
        risk = r.unowned + r.double_owned
        line = (
            f"{r.group:<20} {r.topic:<22} {r.queues:>6} {r.processes:>6} {r.min_per_process:>4} {r.max_per_process:>4} "
            f"{r.unowned:>7} {r.double_owned:>6} {r.lag or 0:>10}  {'; '.join(notes)}"
        )
        lines.append((risk, r.idle_processes, r.group, r.topic, line))
    if args.top is None:
        shown = sorted(lines, key=lambda x: (x[2], x[3]))
    else:
        shown = sorted(lines, key=lambda x: (-x[0], -x[1], x[2], x[3]))[: args.top]
    for *_, line in shown:
        print(line)
    if len(shown) < len(lines):
        print(f"... {len(lines) - len(shown):,} more group/topic pairs (--top)")
    return 3 if args.fail_on_unowned and result.count(FindingKind.UNOWNED) else 0


COMMAND = Command("assign", "who consumes which queue, per group and topic, in-process", add_arguments, run)
