"""``mqbalance zk-consume --zk HOST:PORT --group G --topic T:N [--topic ...] --strategy S --mode M
[--record FILE]`` — one consumer-group member coordinated on ZooKeeper, working through a
synthetic source (:mod:`mqbalance.coordination.worker`) until SIGTERM/SIGINT (or ``--duration``),
recording what it processed."""

from __future__ import annotations

import argparse

from mqbalance.allocation.registry import Use, names_for
from mqbalance.cli._common import Command
from mqbalance.cli._member import add_member_options, member_settings
from mqbalance.exceptions import UsageError

__all__ = ["COMMAND", "zk_auth"]

RECORDS = "out/members"


def _topic(text: str) -> tuple[str, int | None]:
    name, _, n = text.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"--topic wants TOPIC[:PARTITIONS], got {text!r}")
    if not n:
        return name, None
    try:
        count = int(n)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--topic {text!r}: partitions must be an integer") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"--topic {text!r}: partitions must be >= 1")
    return name, count


def zk_auth(text: str | None) -> tuple[str, str] | None:
    """``--auth USER:PASSWORD`` as a pair (``None`` when not given)."""
    if text is None:
        return None
    user, sep, pw = text.partition(":")
    if not sep or not user or not pw:
        raise UsageError("--auth wants USER:PASSWORD", text)
    return user, pw


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--zk", required=True, help="ZooKeeper hosts, HOST:PORT[,HOST:PORT...]")
    add_member_options(
        p,
        topic_type=_topic,
        topic_help="TOPIC[:PARTITIONS] (repeatable); the partition node is created with PARTITIONS if absent",
        client_id_help="client id (default: host-time-random)",
        record_folder=RECORDS,
    )
    p.add_argument(
        "--strategy",
        default="AVG",
        help=f"every-member mode: {', '.join(names_for(Use.ZOOKEEPER_EVERY_MEMBER))}; leader mode also "
        + ", ".join(sorted(set(names_for(Use.ZOOKEEPER_LEADER)) - set(names_for(Use.ZOOKEEPER_EVERY_MEMBER)))),
    )
    p.add_argument("--mode", default="every-member", choices=["every-member", "leader"])
    p.add_argument("--rate", type=float, default=100.0, help="synthetic messages per second per partition")
    p.add_argument("--batch", type=int, default=50, help="messages per processed batch")
    p.add_argument("--commit-interval-ms", type=int, default=500)
    p.add_argument("--session-timeout", type=float, default=6.0, help="seconds (Kafka's default 6)")
    p.add_argument("--rebalance-max-retries", type=int, default=4)
    p.add_argument("--rebalance-backoff-ms", type=int, default=2000)
    p.add_argument("--auth", help="USER:PASSWORD: digest ACLs on the group's nodes")


def run(args: argparse.Namespace) -> int:
    from mqbalance.coordination.worker import ZooKeeperMemberConfig, run_zookeeper_member

    records, duration = member_settings(args, RECORDS, "member")
    if args.rate <= 0 or args.batch < 1 or args.commit_interval_ms < 1:
        raise UsageError("--rate, --batch and --commit-interval-ms must be > 0", None)
    cfg = ZooKeeperMemberConfig(
        hosts=args.zk,
        group=args.group,
        topics=dict(args.topic),
        records=records,
        client_id=args.client_id,
        strategy=args.strategy,
        mode=args.mode,
        rate=args.rate,
        batch=args.batch,
        work_ms=args.work_ms,
        commit_interval_ms=args.commit_interval_ms,
        session_timeout=args.session_timeout,
        rebalance_max_retries=args.rebalance_max_retries,
        rebalance_backoff_ms=args.rebalance_backoff_ms,
        duration=duration,
        auth=zk_auth(args.auth),
    )
    return run_zookeeper_member(cfg)


COMMAND = Command(
    "zk-consume", "run one consumer-group member on ZooKeeper over a synthetic source", add_arguments, run
)
