"""``mqbalance scale --queues N --strategy S --consumers N --consume-rate R [--lag N]
[--produce-rate R] [--drain-target 10m] [--json]``, or ``mqbalance scale --history DIR --group G
[--topic T] [--window 5m] [--to T]``: everything measured from a ``mqbalance watch`` history
(:func:`mqbalance.scaling.measured_load`; a flag given beside it overrides what was measured) —
how many consumers a group needs: the counts at which the largest share per consumer drops under
its strategy, the predicted drain time at each, and the smallest count meeting the target
(:mod:`mqbalance.scaling`). ``--json`` prints what an autoscaler reads (``recommended.consumers``)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from mqbalance.cli._common import Command, at_least, duration_s, iso_time
from mqbalance.exceptions import UsageError

if TYPE_CHECKING:
    from mqbalance.scaling import GroupLoad

__all__ = ["COMMAND"]


def _queues(text: str) -> int | dict[str, int]:
    """``16`` (one broker) or ``broker-a:8,broker-b:8``."""
    try:
        if ":" not in text:
            return int(text)
        out: dict[str, int] = {}
        for part in text.split(","):
            broker, _, count = part.strip().rpartition(":")
            if not broker or broker in out:
                raise ValueError(part)
            out[broker] = int(count)
        return out
    except ValueError:
        raise UsageError(f"--queues: expected a count or BROKER:COUNT[,BROKER:COUNT], got {text!r}", text) from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--history", help="measure everything from this `mqbalance watch` history (with --group)")
    p.add_argument("--group", help="the group to measure in --history")
    p.add_argument("--window", default="5m", help="with --history: the rates over this long (default: 5m)")
    p.add_argument(
        "--to", dest="until", help="with --history: the window ends here (ISO, UTC unless given; default: last tick)"
    )
    p.add_argument("--queues", help="queue count (one broker) or BROKER:COUNT[,BROKER:COUNT]")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--strategy", help="the group's RocketMQ strategy, by its name")
    which.add_argument("--assignor", help="a Kafka group's assignor, by its name")
    count = p.add_mutually_exclusive_group()
    count.add_argument("--consumers", type=int, help="the current consumer count")
    count.add_argument("--client-ids", help="the current client ids, comma-separated (exact for hashing strategies)")
    p.add_argument("--consume-rate", type=float, help="msg/s one consumer processes, measured while lagging")
    p.add_argument("--lag", type=int, help="messages behind, the whole topic (spread evenly; default 0)")
    p.add_argument("--produce-rate", type=float, help="msg/s produced into the topic (default 0)")
    p.add_argument("--drain-target", help="drain the lag within this long, e.g. 10m")
    p.add_argument("--max-consumers", type=int, help="largest count to consider (default: the queue count)")
    p.add_argument("--id-samples", type=int, default=32, help="id sets per count for hashing strategies (default 32)")
    p.add_argument("--topic", help="the topic's name (hashing strategies hash it; default TopicTest)")
    p.add_argument("--json", action="store_true", help="print JSON (for an autoscaler) instead of a table")


def _measured(args: argparse.Namespace) -> GroupLoad | None:
    """The load measured from ``--history`` (``None`` without it)."""
    from mqbalance.scaling import measured_load

    if args.history is None:
        for flag, value in (("--group", args.group), ("--to", args.until)):
            if value is not None:
                raise UsageError(f"{flag}: only with --history", value)
        return None
    if args.group is None:
        raise UsageError("--history: give the --group to measure", args.history)
    until = iso_time(args.until, "--to")
    return measured_load(
        args.history,
        args.group,
        topic=args.topic,
        window_s=duration_s(args.window, "--window"),
        until_ms=None if until is None else round(until.timestamp() * 1000),
    )


def run(args: argparse.Namespace) -> int:
    from mqbalance.scaling import GroupLoad, advise

    at_least(args.consumers, 1, "--consumers")
    at_least(args.max_consumers, 1, "--max-consumers")
    at_least(args.id_samples, 1, "--id-samples")
    at_least(args.lag, 0, "--lag")
    if args.consume_rate is not None and not args.consume_rate > 0:
        raise UsageError(f"--consume-rate: must be > 0 msg/s, got {args.consume_rate}", args.consume_rate)
    if args.produce_rate is not None and not args.produce_rate >= 0:
        raise UsageError(f"--produce-rate: must be >= 0 msg/s, got {args.produce_rate}", args.produce_rate)
    ids = [c.strip() for c in args.client_ids.split(",")] if args.client_ids is not None else None
    if ids is not None and (not all(ids) or len(set(ids)) != len(ids)):
        raise UsageError(
            f"--client-ids: expected distinct non-empty ids, comma-separated, got {args.client_ids!r}", ids
        )
    measured = _measured(args)
    if measured is None:
        for flag, value in (("--queues", args.queues), ("--strategy or --assignor", args.strategy or args.assignor),
                            ("--consumers or --client-ids", ids or args.consumers),
                            ("--consume-rate", args.consume_rate)):  # fmt: skip
            if value is None:
                raise UsageError(f"{flag} is required (or measure them with --history DIR --group G)", None)
        measured = GroupLoad(queues=0, strategy="", consumers=0, consume_rate=0.0, topic="TopicTest")
    load = GroupLoad(
        queues=_queues(args.queues) if args.queues is not None else measured.queues,
        strategy=args.assignor or args.strategy or measured.strategy,
        kafka=args.assignor is not None,
        consumers=ids if ids is not None else args.consumers if args.consumers is not None else measured.consumers,
        consume_rate=args.consume_rate if args.consume_rate is not None else measured.consume_rate,
        lag=args.lag if args.lag is not None else measured.lag,
        produce_rate=args.produce_rate if args.produce_rate is not None else measured.produce_rate,
        topic=args.topic or measured.topic,
    )
    target = duration_s(args.drain_target, "--drain-target") if args.drain_target is not None else None
    advice = advise(load, drain_target_s=target, max_consumers=args.max_consumers, id_samples=args.id_samples)
    print(json.dumps(advice.to_dict(), indent=2) if args.json else advice.format())
    return 0


COMMAND = Command("scale", "how many consumers a group needs to drain its lag in time", add_arguments, run)
