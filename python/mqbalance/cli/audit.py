"""``mqbalance audit [SNAPSHOT] [--previous SNAPSHOT] [--out DIR] [--master URL] [--fail-on KINDS]
[--what-if STRATEGIES]`` — the main job: the owner of every readable queue of every (group, topic)
computed on Spark as the clients compute it, and the audit of it (:mod:`mqbalance.fleet`), with
what switching strategy would do (``--what-if``). A Kafka snapshot (which carries its assignment)
is audited in-process unless a Spark target is named, by the same rules into the same outputs."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from mqbalance.cli._common import (
    Command,
    add_lag_time_budget,
    add_out,
    add_quiet,
    add_spark_options,
    at_least,
    spark_target,
    writable_dir,
)
from mqbalance.cli._fleet import add_fleet_input, example, fail_on_exit, fleet_input
from mqbalance.exceptions import UsageError
from mqbalance.progress import Progress

if TYPE_CHECKING:
    from mqbalance.fleet import AnySnapshot

__all__ = ["COMMAND"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    from mqbalance.fleet import DEFAULT_WHAT_IF, KAFKA_WHAT_IF

    add_fleet_input(p)
    p.add_argument(
        "--previous",
        help="an earlier snapshot of the same cluster: for churn, and the rates of time to drain",
    )
    add_lag_time_budget(p)
    add_out(p, "out/audit")
    add_spark_options(p)
    p.add_argument("--partitions", type=int, help="Spark partitions of the work (default: one per core)")
    p.add_argument("--driver-memory", help="Spark driver memory, e.g. 4g (default: 2g, +1g per 5×10^7 queues)")
    p.add_argument("--executor-memory", help="Spark executor memory on a cluster, e.g. 4g")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="any Spark setting (repeatable)")
    p.add_argument(
        "--no-assignments", action="store_true", help="skip writing assignments/ (one Parquet row per queue)"
    )
    p.add_argument(
        "--ship-environment",
        action="store_true",
        help="for clusters whose workers lack mqbalance: pack this Python environment (mqbalance with its compiled "
        "core, numpy, pyarrow, pandas, pyyaml; about 100 MB) and ship it to the executors as spark.archives. "
        "Costs about 10 s to pack on the first run (cached under ~/.cache/mqbalance, reused until mqbalance or a "
        "dependency changes) and an upload to every executor on every run. The workers need this OS, CPU "
        "architecture and base Python at the same path. Ignored in local mode",
    )
    p.add_argument(
        "--fail-on", help="comma-separated finding kinds that make the exit code 3, e.g. unowned,double-owned"
    )
    p.add_argument(
        "--what-if",
        metavar="STRATEGIES",
        help="comma-separated strategies to try on every clustering group: queues that would move on a switch, "
        "max load, idle processes (a report section; computed in the same executor pass, about 1x the assignment's "
        f"work per candidate, more for STICKY). Default: {','.join(DEFAULT_WHAT_IF)} on fleets of up to 10^5 "
        f"readable queues; on Kafka fleets the assignors {','.join(KAFKA_WHAT_IF)}; 'none' turns it off",
    )
    p.add_argument("--seed", type=int, default=7, help="seed of the bundled example fleet")
    add_quiet(p)


def _spark_conf(args: argparse.Namespace) -> dict[str, str]:
    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf: expected KEY=VALUE, got {item!r}", item)
        conf[key.strip()] = value
    if args.executor_memory:
        conf["spark.executor.memory"] = args.executor_memory
    at_least(args.partitions, 1, "--partitions")
    return conf


def _what_if(option: str | None, snap: AnySnapshot, say: Progress) -> tuple[object, ...]:
    """The candidates of ``--what-if`` for the snapshot's kind (:func:`mqbalance.fleet.what_if_for`),
    saying when the defaults are skipped on a large fleet."""
    from mqbalance.fleet import DEFAULT_WHAT_IF, WHAT_IF_DEFAULT_MAX_QUEUES, what_if_for

    candidates = what_if_for(snap, option)
    if option is None and not candidates:
        say(f"what-if skipped above {WHAT_IF_DEFAULT_MAX_QUEUES:,} queues (--what-if {','.join(DEFAULT_WHAT_IF)})")
    return candidates


def run(args: argparse.Namespace) -> int:
    from mqbalance.fleet import (
        FINDING_KINDS,
        assignments_on_spark,
        audit,
        audit_on_spark,
        audits_on_spark,
        check_snapshots,
        describe,
        load_any_snapshot,
        unit_count,
        write_outputs,
    )
    from mqbalance.fleet.report import what_if_summary
    from mqbalance.fleet.shipping import environment_archive, explain_executor_errors
    from mqbalance.fleet.spark import is_connect, session

    fail_on = [k for k in (args.fail_on or "").split(",") if k]
    unknown = [k for k in fail_on if k not in FINDING_KINDS]
    if unknown:
        raise UsageError(f"--fail-on: unknown kind(s) {unknown}; known: {', '.join(FINDING_KINDS)}", unknown)
    say = Progress(quiet=args.quiet)
    writable_dir(args.out, "--out")
    at_least(args.lag_time_budget, 0, "--lag-time-budget")
    given = fleet_input(args, say, args.lag_time_budget)
    if given is not None:
        snap, prev = given, load_any_snapshot(args.previous) if args.previous else None
    else:
        snap, prev = example(args.seed)
    check_snapshots(snap, prev)  # before Spark starts
    say(f"loaded {snap.source}: {describe(snap)}" + (f"; previous: {prev.source}" if prev else ""))
    what_if = _what_if(args.what_if, snap, say)
    target = spark_target(args)
    result = None
    if target is None and not audits_on_spark(snap):  # one row per (group, topic): in-process
        result = audit(snap, previous=prev, what_if=what_if)  # type: ignore[arg-type]
    else:
        say(f"starting Spark ({target or 'local[2]'})")
        ship = args.ship_environment and not args.remote and not (args.master or "local").startswith("local")
        if args.ship_environment and not ship:
            say("local mode: the executors run this Python already; --ship-environment ignored")
        if ship:
            environment_archive(progress=say)  # packs it (or finds it in the cache) before Spark starts
        conf = _spark_conf(args)
        # The driver holds the snapshot's tables and a few fact rows per (group, topic), never a row per queue.
        driver_memory = args.driver_memory or f"{2 + unit_count(snap) // 50_000_000}g"
        with (
            explain_executor_errors(),
            session(
                args.master, remote=args.remote, ship_environment=ship, driver_memory=driver_memory, conf=conf
            ) as spark,
        ):
            remote = is_connect(spark)
            stages = (lambda what: contextlib.nullcontext()) if remote else (lambda what: say.spark_stages(spark, what))
            assignments = Path(args.out) / "assignments"
            # Local executors write the assignment rows as they compute them; a cluster's executors may
            # not share this file system, so there Spark writes them in a second pass.
            in_tasks = not args.no_assignments and not remote and spark.sparkContext.master.startswith("local")
            say("auditing every (group, topic) in the executors")
            with stages("audit"):
                result = audit_on_spark(
                    spark,
                    snap,
                    partitions=args.partitions,
                    previous=prev,
                    what_if=what_if,  # type: ignore[arg-type]
                    assignments_dir=assignments if in_tasks else None,
                )
            if not args.no_assignments and not in_tasks:
                with stages("assignments"):
                    frame = assignments_on_spark(spark, snap, partitions=args.partitions)
                    if frame is not None:
                        frame.write.mode("overwrite").parquet(str(assignments))
            if not args.no_assignments and audits_on_spark(snap):
                say(f"wrote {assignments}/ (one row per queue and consuming process, Parquet)")
    say(f"audited {len(result.rows):,} group/topic pairs")
    paths = write_outputs(result, args.out, source=snap.source, snapshot_errors=snap.error_lines())
    say(f"wrote {args.out}/ (report.md, report.html, findings.json/.csv, group_topics.csv, plots)")
    print()
    print("Summary")
    for k, v in result.totals.to_dict().items():
        print(f"  {k:<20} {v:,}")
    switched = what_if_summary(result)
    if switched:
        print("What if every group switched (queues moved, pairs above 1.25x fair share, idle processes)")
        for c in switched:
            print(f"  {c.name:<24} {c.moved:>12,} {c.over:>8,} {c.idle:>8,}")
    worst = result.worst(8)
    if worst:
        print("Top findings")
        for f in worst:
            print(f"  {f.kind.value:<20} {f.group:<20} {f.topic or '':<22} {f.detail}")
    print(f"Report: {paths['report_md']}")
    return fail_on_exit(result, fail_on)


COMMAND = Command(
    "audit", "the main job: assign every group/topic of a fleet snapshot on Spark and audit it", add_arguments, run
)
