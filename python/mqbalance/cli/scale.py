"""``mqbalance scale --queues N --strategy S --consumers N --consume-rate R [--lag N]
[--produce-rate R] [--drain-target 10m] [--json]`` — how many consumers a group needs: the counts
at which the largest share per consumer drops under its strategy, the predicted drain time at each,
and the smallest count meeting the target (:mod:`mqbalance.scaling`). ``--json`` prints what an
autoscaler reads (``recommended.consumers``)."""

from __future__ import annotations

import argparse
import json

from mqbalance.cli._common import Command, at_least, duration_s
from mqbalance.exceptions import UsageError

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
    p.add_argument("--queues", required=True, help="queue count (one broker) or BROKER:COUNT[,BROKER:COUNT]")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--strategy", help="the group's RocketMQ strategy, by its name")
    which.add_argument("--assignor", help="a Kafka group's assignor, by its name")
    count = p.add_mutually_exclusive_group(required=True)
    count.add_argument("--consumers", type=int, help="the current consumer count")
    count.add_argument("--client-ids", help="the current client ids, comma-separated (exact for hashing strategies)")
    p.add_argument(
        "--consume-rate", type=float, required=True, help="msg/s one consumer processes, measured while lagging"
    )
    p.add_argument("--lag", type=int, default=0, help="messages behind, the whole topic (spread evenly; default 0)")
    p.add_argument("--produce-rate", type=float, default=0.0, help="msg/s produced into the topic (default 0)")
    p.add_argument("--drain-target", help="drain the lag within this long, e.g. 10m")
    p.add_argument("--max-consumers", type=int, help="largest count to consider (default: the queue count)")
    p.add_argument("--id-samples", type=int, default=32, help="id sets per count for hashing strategies (default 32)")
    p.add_argument("--topic", default="TopicTest", help="the topic's name (hashing strategies hash it)")
    p.add_argument("--json", action="store_true", help="print JSON (for an autoscaler) instead of a table")


def run(args: argparse.Namespace) -> int:
    from mqbalance.scaling import GroupLoad, advise

    at_least(args.consumers, 1, "--consumers")
    at_least(args.max_consumers, 1, "--max-consumers")
    at_least(args.id_samples, 1, "--id-samples")
    at_least(args.lag, 0, "--lag")
    if not args.consume_rate > 0:
        raise UsageError(f"--consume-rate: must be > 0 msg/s, got {args.consume_rate}", args.consume_rate)
    if not args.produce_rate >= 0:
        raise UsageError(f"--produce-rate: must be >= 0 msg/s, got {args.produce_rate}", args.produce_rate)
    ids = [c.strip() for c in args.client_ids.split(",")] if args.client_ids is not None else None
    if ids is not None and (not all(ids) or len(set(ids)) != len(ids)):
        raise UsageError(
            f"--client-ids: expected distinct non-empty ids, comma-separated, got {args.client_ids!r}", ids
        )
    load = GroupLoad(
        queues=_queues(args.queues),
        strategy=args.assignor or args.strategy,
        kafka=args.assignor is not None,
        consumers=ids if ids is not None else args.consumers,
        consume_rate=args.consume_rate,
        lag=args.lag,
        produce_rate=args.produce_rate,
        topic=args.topic,
    )
    target = duration_s(args.drain_target, "--drain-target") if args.drain_target is not None else None
    advice = advise(load, drain_target_s=target, max_consumers=args.max_consumers, id_samples=args.id_samples)
    print(json.dumps(advice.to_dict(), indent=2) if args.json else advice.format())
    return 0


COMMAND = Command("scale", "how many consumers a group needs to drain its lag in time", add_arguments, run)
