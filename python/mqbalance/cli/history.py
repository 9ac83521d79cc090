"""``mqbalance history DIR [--out DIR] [--from T] [--to T] [--group G] [--engine E]`` — analyse a
history dataset that ``mqbalance watch`` wrote: rebalance episodes, flapping clients and groups,
duplicated ids, queue health (:mod:`mqbalance.history`). A small history is analysed in this
process (no JVM to start), a large one — or any with ``--master`` / ``--remote`` — on Spark; the
results are the same."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import sys
from collections import Counter
from pathlib import Path

from mqbalance.cli._common import (
    Command,
    add_out,
    add_quiet,
    add_spark_options,
    at_least,
    duration_s,
    iso_time,
    spark_target,
)
from mqbalance.exceptions import UsageError
from mqbalance.progress import Progress

__all__ = ["COMMAND", "LOCAL_MAX_BYTES"]

#: ``--engine auto`` analyses in process a history of at most this many bytes of group, membership
#: and ownership files (:func:`mqbalance.history.job.data_bytes`). Measured on 2 cores: a day of
#: 10^5 queues (30 MiB of them, 330 MiB with the offsets) took 136 s in process against 380 s on
#: local Spark; a cluster (``--master``) is for more than one machine holds
LOCAL_MAX_BYTES = 512 << 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="the history directory `mqbalance watch` writes")
    add_out(p, "out/history")
    p.add_argument("--group", action="append", default=[], help="only this group (repeatable)")
    p.add_argument("--from", dest="since", help="episodes starting from this time (ISO, UTC unless given)")
    p.add_argument("--to", dest="until", help="data up to this time (ISO, UTC unless given)")
    p.add_argument("--window", default="60s", help="membership changes closer than this are one episode (60s)")
    p.add_argument("--min-cycles", type=int, default=3, help="join/leave cycles that make a client flapping (3)")
    p.add_argument("--min-episodes", type=int, default=5, help="episodes that make a group flapping (5)")
    p.add_argument("--span", default="6h", help="read the range this much at a time: memory follows it (6h)")
    p.add_argument(
        "--engine",
        choices=("auto", "local", "spark"),
        default="auto",
        help="where the analysis runs: in this process, on Spark, or auto (in process up to "
        f"{LOCAL_MAX_BYTES >> 20} MiB of event files when no --master/--remote is given)",
    )
    add_spark_options(p)
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from mqbalance.fleet.spark import session
    from mqbalance.history.job import analyse, data_bytes
    from mqbalance.history.report import write_history_outputs
    from mqbalance.history.writer import open_history

    open_history(args.dir, create=False)  # one line before Spark starts when it is not a history
    start, end = iso_time(args.since, "--from"), iso_time(args.until, "--to")
    window = duration_s(args.window, "--window")
    span = dt.timedelta(seconds=duration_s(args.span, "--span"))
    at_least(args.min_cycles, 1, "--min-cycles")
    at_least(args.min_episodes, 1, "--min-episodes")
    say = Progress(quiet=args.quiet, stream=sys.stderr)
    target = spark_target(args)
    if args.engine == "local" and target is not None:
        raise UsageError(f"--engine local runs in this process: it takes no Spark target, got {target!r}", target)
    size = data_bytes(args.dir)
    on_spark = args.engine == "spark" or (args.engine == "auto" and (target is not None or size > LOCAL_MAX_BYTES))
    if on_spark:
        say(f"{size / 2**20:,.1f} MiB of membership events: starting Spark ({target or 'local[2]'})")
    else:
        say(f"{size / 2**20:,.1f} MiB of membership events: analysing in this process")
    with session(args.master, remote=args.remote) if on_spark else contextlib.nullcontext() as spark:
        result = analyse(
            spark,
            args.dir,
            groups=args.group,
            start=start,
            end=end,
            window=window,
            min_cycles=args.min_cycles,
            min_episodes=args.min_episodes,
            span=span,
            progress=say,
        )
    write_history_outputs(result, args.out, root=args.dir)
    summary = {
        "episodes": len(result.episodes),
        "flapping_clients": len(result.flapping_clients),
        "flapping_groups": len(result.flapping_groups),
        "duplicate_ids": len(result.duplicate_ids),
        "health": dict(Counter(h["status"] for h in result.health)),
    }
    if result.cluster_kind == "kafka":  # the broker's generation / epoch increments, per group
        summary["rebalances"] = {g["group"]: g["rebalances"] for g in result.groups}
        summary["fenced"] = len(result.fenced)
    Path(args.out, "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary))
    return 0


COMMAND = Command(
    "history", "analyse a history dataset: rebalance episodes, flapping, queue health", add_arguments, run
)
