"""``mqbalance history DIR [--out DIR] [--from T] [--to T] [--group G]`` — analyse a history
dataset that ``mqbalance watch`` wrote, on Spark: rebalance episodes, flapping clients and groups,
duplicated ids, queue health (:mod:`mqbalance.history`)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections import Counter
from pathlib import Path

from mqbalance.cli._common import Command, add_out, add_quiet, add_spark_options, at_least, duration_s, spark_target
from mqbalance.exceptions import UsageError
from mqbalance.progress import Progress

__all__ = ["COMMAND"]


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
    add_spark_options(p)
    add_quiet(p)


def _when(text: str | None, flag: str) -> dt.datetime | None:
    if text is None:
        return None
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{flag}: expected an ISO time like 2026-11-25T03:00, got {text!r}", text) from None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def run(args: argparse.Namespace) -> int:
    from mqbalance.fleet.spark import session
    from mqbalance.history.job import analyse
    from mqbalance.history.report import write_history_outputs
    from mqbalance.history.writer import open_history

    open_history(args.dir, create=False)  # one line before Spark starts when it is not a history
    start, end = _when(args.since, "--from"), _when(args.until, "--to")
    window = duration_s(args.window, "--window")
    span = dt.timedelta(seconds=duration_s(args.span, "--span"))
    at_least(args.min_cycles, 1, "--min-cycles")
    at_least(args.min_episodes, 1, "--min-episodes")
    say = Progress(quiet=args.quiet, stream=sys.stderr)
    say(f"starting Spark ({spark_target(args) or 'local[2]'})")
    with session(args.master, remote=args.remote) as spark:
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
    Path(args.out, "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary))
    return 0


COMMAND = Command(
    "history", "analyse a history dataset on Spark: rebalance episodes, flapping, queue health", add_arguments, run
)
