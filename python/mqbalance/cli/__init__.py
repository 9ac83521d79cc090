"""The ``mqbalance`` command line: one module of this package per command.

``mqbalance audit [SNAPSHOT] [--previous SNAPSHOT] [--out DIR] [--master URL] [--fail-on KINDS]
[--what-if STRATEGIES]`` — the main job: the owner of every readable queue of every (group, topic)
computed on Spark as the clients compute it, and the audit of it (see :mod:`mqbalance.fleet`), with
what switching strategy would do (``--what-if``). Without ``SNAPSHOT`` it audits the bundled
example fleet (:mod:`mqbalance.fleet.rocketmq.example`) against its previous state (:mod:`.audit`).

``mqbalance assign [SNAPSHOT]`` — the same assignment in-process (no Spark), summarised per group
(:mod:`.assign`).

``mqbalance snapshot --namesrv HOST:PORT[;HOST:PORT] -o fleet.json|DIR`` — read a live RocketMQ
cluster (topics, routes, groups, connections, reported strategies, committed offsets) into a
snapshot: JSON, or the Parquet layout for any other ``-o``; ``--bootstrap HOST:PORT[,HOST:PORT]``
reads a live Kafka cluster instead (:mod:`.snapshot`). ``audit`` and ``assign`` take either kind of
snapshot file and tell them apart, or ``--namesrv`` to read a RocketMQ cluster directly. With
``MQBALANCE_ACCESS_KEY`` and ``MQBALANCE_SECRET_KEY`` set, every RocketMQ request is signed (ACL).

``mqbalance watch --namesrv HOST:PORT --out DIR [--interval 10s] [--offsets-interval 60s]`` — watch
a live RocketMQ cluster until stopped: every change of membership and queue ownership, and the
offsets, into a history dataset, continued after a restart (:mod:`.watch`).

``mqbalance history DIR [--out DIR] [--from T] [--to T]`` — analyse that history dataset on Spark:
rebalance episodes, flapping clients and groups, queue health (:mod:`.history`).

``mqbalance simulate SCENARIO [--strategy S,S...] [--out DIR] [--seed N] [--client-ids L]`` — run
a rebalance scenario (a YAML/JSON file or a bundled name, see ``--list``) through
:mod:`mqbalance.sim`: metrics and plots per strategy, a comparison when several run
(:mod:`.simulate`).

``mqbalance scale --queues N --strategy S --consumers N --consume-rate R [--lag N] [--produce-rate R]
[--drain-target 10m] [--json]`` — how many consumers a group needs: the counts at which the largest
share per consumer drops under its strategy, the predicted drain time at each, the smallest count
meeting the target; ``--json`` for an autoscaler (:mod:`.scale`).

``mqbalance fault-latency-demo`` — the two-broker latency experiment: how the producer's
``MQFaultStrategy`` isolates slow brokers, pre-4.9 loop vs 4.x vs 5.x (:mod:`.fault_latency_demo`).

One consumer-group member per process, each recording what it did in a record file, with the same
life cycle (:mod:`mqbalance.member_process`) and the same ``--group``, ``--topic``,
``--client-id``, ``--record``, ``--duration``, ``--work-ms`` options:

- ``mqbalance rocketmq-consume --namesrv HOST:PORT --group G --topic T --strategy S`` — on a real
  RocketMQ cluster (:mod:`.rocketmq_consume`);
- ``mqbalance kafka-consume --bootstrap HOST:PORT --group G --topic T --assignor A`` — on a real
  Kafka-protocol broker, with kafka-python (:mod:`.kafka_consume`);
- ``mqbalance zk-consume --zk HOST:PORT --group G --topic T:N --strategy S --mode M`` — coordinated
  on ZooKeeper over a synthetic source (:mod:`.zk_consume`); ``mqbalance group status --zk
  HOST:PORT --group G`` shows such a group (:mod:`.group`).

Exit codes: 0 done; 2 bad input (the message names the option, or the file and field); 3 findings
of a kind listed in ``--fail-on`` (``--fail-on-unowned`` for ``assign``; ``--fail-on-unstable`` for
``simulate``: a group that never again had every queue pulled exactly once after some event); 4 a
partial snapshot with ``--fail-on-partial``, or a ``rocketmq-consume`` member that refused a
duplicated client id; 130 interrupted (Ctrl-C).

Adding a command: a module here named after it (``-`` as ``_``) whose ``COMMAND`` is a
:class:`~mqbalance.cli._common.Command` (name, help, ``add_arguments``, ``run``), imported lazily
as the others (heavy modules inside the functions), and its paragraph above. :func:`main` finds it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqbalance.cli._common import Command

__all__ = ["main"]


def commands() -> dict[str, Command]:
    """Every command, by name: the ``COMMAND`` of each public module of this package."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            command: Command = importlib.import_module(f"{__name__}.{info.name}").COMMAND
            found[command.name] = command
    return found


def _parser(known: dict[str, Command], argv: list[str]) -> argparse.ArgumentParser:
    """Every command's sub-parser; only the one named in ``argv`` gets its arguments (a command's
    options may need its modules, which the others should not load)."""
    parser = argparse.ArgumentParser(
        prog="mqbalance", description="Consumer-group load balancing, exactly as the Java clients compute it."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    chosen = argv[0] if argv else None
    for name, command in known.items():
        p = sub.add_parser(name, help=command.help, description=command.help)
        if name == chosen:
            command.add_arguments(p)
    return parser


def _one_line(message: str) -> str:
    return " ".join(message.split("\n")) if "\n" in message else message


def main(argv: list[str] | None = None) -> int:
    """Run ``mqbalance ARGS`` (``argv``; default: ``sys.argv[1:]``) and return the exit code. Every
    error is one line on standard error: a :class:`~mqbalance.exceptions.MQBalanceError` or a file
    that cannot be read or written exits 2 (argparse's own usage errors too), Ctrl-C exits 130 —
    also while starting up."""
    from mqbalance.exceptions import MQBalanceError

    try:
        args_list = sys.argv[1:] if argv is None else list(argv)
        known = commands()
        args = _parser(known, args_list).parse_args(args_list)
        return known[args.command].run(args)
    except KeyboardInterrupt:
        print("mqbalance: interrupted", file=sys.stderr)
        return 130
    except MQBalanceError as e:
        print(f"mqbalance: error: {_one_line(str(e))}", file=sys.stderr)
        return 2
    except OSError as e:  # a file or directory we could not read or write: one line, no traceback
        if isinstance(e, BrokenPipeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        where = f"{e.filename}: " if e.filename else ""
        print(f"mqbalance: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
