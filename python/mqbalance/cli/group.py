"""``mqbalance group status --zk HOST:PORT --group G [--json]`` — a consumer group on ZooKeeper:
members, leader, generation, owners, committed offsets and lag
(:func:`mqbalance.coordination.status.group_status`)."""

from __future__ import annotations

import argparse

from mqbalance.cli._common import Command
from mqbalance.cli.zk_consume import zk_auth

__all__ = ["COMMAND"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    gs = p.add_subparsers(dest="group_command", required=True)
    s = gs.add_parser("status", help="members, leader, owners, committed offsets and lag")
    s.add_argument("--zk", required=True)
    s.add_argument("--group", required=True)
    s.add_argument("--json", action="store_true")
    s.add_argument("--timeout", type=float, default=5.0)
    s.add_argument("--auth", help="USER:PASSWORD")


def run(args: argparse.Namespace) -> int:
    from mqbalance.coordination.status import group_status

    st = group_status(args.zk, args.group, timeout=args.timeout, auth=zk_auth(args.auth))
    print(st.to_json() if args.json else st.format())
    return 0


COMMAND = Command("group", "inspect a consumer group on ZooKeeper", add_arguments, run)
