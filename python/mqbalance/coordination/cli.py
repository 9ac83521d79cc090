"""``mqbalance member`` and ``mqbalance group status`` (registered by :mod:`mqbalance.cli`).

``mqbalance member --zk HOST:PORT --group G --topic T:N [--topic ...] --strategy S --mode M
--records FILE`` runs one member process on the synthetic source until SIGTERM/SIGINT (or
``--duration``); ``mqbalance group status --zk HOST:PORT --group G [--json]`` prints members,
leader, generation, owners, committed offsets and lag.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqbalance.allocation.registry import Use, names_for
from mqbalance.exceptions import InvalidInputError

__all__ = ["add_subcommands"]


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


def _auth(text: str | None) -> tuple[str, str] | None:
    if text is None:
        return None
    user, sep, pw = text.partition(":")
    if not sep or not user or not pw:
        raise InvalidInputError("--auth wants USER:PASSWORD", text)
    return user, pw


def _cmd_member(args: argparse.Namespace) -> int:
    from mqbalance.coordination.worker import MemberConfig, run_member

    logging.basicConfig(level=logging.WARNING if not args.verbose else logging.INFO, format="%(asctime)s %(message)s")
    if args.rate <= 0 or args.batch < 1 or args.commit_interval_ms < 1:
        raise InvalidInputError("--rate, --batch and --commit-interval-ms must be > 0", None)
    cid = args.id
    records = Path(args.records) if args.records else Path("out/members") / f"{cid or 'member'}.jsonl"
    cfg = MemberConfig(
        hosts=args.zk,
        group=args.group,
        topics=dict(args.topic),
        records=records,
        client_id=cid,
        strategy=args.strategy,
        mode=args.mode,
        rate=args.rate,
        batch=args.batch,
        work_ms=args.work_ms,
        commit_interval_ms=args.commit_interval_ms,
        session_timeout=args.session_timeout,
        rebalance_max_retries=args.rebalance_max_retries,
        rebalance_backoff_ms=args.rebalance_backoff_ms,
        duration=args.duration,
        auth=_auth(args.auth),
    )
    return run_member(cfg)


def _cmd_group(args: argparse.Namespace) -> int:
    from mqbalance.coordination.status import group_status

    st = group_status(args.zk, args.group, timeout=args.timeout, auth=_auth(args.auth))
    print(st.to_json() if args.json else st.format())
    return 0


def add_subcommands(sub: Any) -> dict[str, Callable[[argparse.Namespace], int]]:
    """Add ``member`` and ``group`` to the ``mqbalance`` sub-parsers; returns their handlers."""
    m = sub.add_parser("member", help="run one consumer-group member on ZooKeeper over a synthetic source")
    m.add_argument("--zk", required=True, help="ZooKeeper hosts, HOST:PORT[,HOST:PORT...]")
    m.add_argument("--group", required=True)
    m.add_argument(
        "--topic",
        required=True,
        action="append",
        type=_topic,
        help="TOPIC[:PARTITIONS] (repeatable); the partition node is created with PARTITIONS if absent",
    )
    m.add_argument(
        "--strategy",
        default="AVG",
        help=f"every-member mode: {', '.join(names_for(Use.ZOOKEEPER_EVERY_MEMBER))}; leader mode also "
        + ", ".join(sorted(set(names_for(Use.ZOOKEEPER_LEADER)) - set(names_for(Use.ZOOKEEPER_EVERY_MEMBER)))),
    )
    m.add_argument("--mode", default="every-member", choices=["every-member", "leader"])
    m.add_argument("--id", help="client id (default: host-time-random)")
    m.add_argument("--records", help="append-only record file (default: out/members/<id>.jsonl)")
    m.add_argument("--rate", type=float, default=100.0, help="synthetic messages per second per partition")
    m.add_argument("--batch", type=int, default=50, help="messages per processed batch")
    m.add_argument("--work-ms", type=float, default=0.0, help="simulated processing time per batch")
    m.add_argument("--commit-interval-ms", type=int, default=500)
    m.add_argument("--session-timeout", type=float, default=6.0, help="seconds (Kafka's default 6)")
    m.add_argument("--rebalance-max-retries", type=int, default=4)
    m.add_argument("--rebalance-backoff-ms", type=int, default=2000)
    m.add_argument("--duration", type=float, help="leave gracefully after this many seconds")
    m.add_argument("--auth", help="USER:PASSWORD: digest ACLs on the group's nodes")
    m.add_argument("-v", "--verbose", action="store_true")
    g = sub.add_parser("group", help="inspect a consumer group on ZooKeeper")
    gs = g.add_subparsers(dest="group_command", required=True)
    s = gs.add_parser("status", help="members, leader, owners, committed offsets and lag")
    s.add_argument("--zk", required=True)
    s.add_argument("--group", required=True)
    s.add_argument("--json", action="store_true")
    s.add_argument("--timeout", type=float, default=5.0)
    s.add_argument("--auth", help="USER:PASSWORD")
    return {"member": _cmd_member, "group": _cmd_group}
