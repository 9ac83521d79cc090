"""What every command module uses: :class:`Command` (how a command registers itself) and the
options written once — durations, the Spark target, output folders, the RocketMQ connection and
its ACL credentials, ``--quiet``. Imports here stay light: ``mqbalance --help`` loads no Spark,
kazoo, Arrow or kafka-python.

>>> duration_s("1.5m", "--window"), duration_s("30", "--duration")
(90.0, 30.0)
>>> duration_s("soon", "--window")
Traceback (most recent call last):
...
mqbalance.exceptions.UsageError: --window: expected a duration like 10s, 5m, 2h or 7d, got 'soon'
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqbalance.exceptions import UsageError

if TYPE_CHECKING:
    from mqbalance.remoting import AclCredentials

__all__ = ["Command"]


@dataclass(frozen=True)
class Command:
    """One top-level command: a module of :mod:`mqbalance.cli` named after it (``-`` as ``_``)
    holds ``COMMAND = Command(...)``. :func:`mqbalance.cli.main` adds ``add_arguments`` to the
    command's sub-parser only when that command runs, and maps what ``run`` raises to an exit
    code; ``run`` returns the exit code otherwise."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def duration_s(text: str, flag: str) -> float:
    """``10s``, ``1.5m``, ``2h``, ``7d`` or plain seconds, as seconds (> 0)."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    value = text.strip().lower()
    scale = units.get(value[-1:])
    number = value[:-1] if scale is not None else value
    try:
        seconds = float(number) * (scale or 1.0)
    except ValueError:
        raise UsageError(f"{flag}: expected a duration like 10s, 5m, 2h or 7d, got {text!r}", text) from None
    if not 0 < seconds < 10**8:
        raise UsageError(f"{flag}: must be a positive duration, got {text!r}", text)
    return seconds


def at_least(value: int | None, minimum: int, flag: str) -> None:
    """A :class:`~mqbalance.exceptions.UsageError` when an integer option is below ``minimum``."""
    if value is not None and value < minimum:
        raise UsageError(f"{flag}: must be >= {minimum}, got {value}", value)


def add_quiet(p: argparse.ArgumentParser, help: str = "no progress lines") -> None:
    p.add_argument("--quiet", action="store_true", help=help)


def add_out(p: argparse.ArgumentParser, default: str, help: str | None = None) -> None:
    """``--out DIR`` with a default (checked by :func:`writable_dir` when the command runs)."""
    p.add_argument("--out", default=default, help=help or f"output directory (default: {default})")


def writable_dir(path: str, flag: str) -> Path:
    """Create ``path`` (and parents) and prove a file can be written in it — before any work, so
    an unusable output path fails in a second, not after the whole job."""
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".mqbalance-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"{flag} {path}: cannot write there: {e.strerror or e}", path) from None
    return out


def add_spark_options(p: argparse.ArgumentParser) -> None:
    """``--master`` / ``--remote``: where Spark runs (checked by :func:`spark_target`)."""
    p.add_argument("--master", help="Spark master URL (default: local[2])")
    p.add_argument("--remote", metavar="sc://HOST:PORT", help="run on a Spark Connect server instead of --master")


def spark_target(args: argparse.Namespace) -> str | None:
    """The Spark target to say in a progress line (``None``: no Spark asked for); refuses both."""
    if args.master and args.remote:
        raise UsageError("--remote and --master: give one (a Spark Connect server or a master URL)", args.remote)
    target: str | None = args.remote or args.master
    return target


def add_live_options(p: argparse.ArgumentParser, *, required: bool) -> None:
    """``--namesrv``, ``--timeout``, ``--no-running-info``: reading a live RocketMQ cluster."""
    p.add_argument(
        "--namesrv",
        required=required,
        metavar="HOST:PORT[;HOST:PORT]",
        help="read the live cluster behind these RocketMQ name servers"
        + ("" if required else " instead of a snapshot file"),
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=3.0 if required else None,
        help="seconds per request to a name server or broker (default: 3)",
    )
    p.add_argument(
        "--no-running-info",
        action="store_true",
        help="do not ask each client for its strategy (GET_CONSUMER_RUNNING_INFO): every client counts as AVG",
    )


def add_lag_time_budget(p: argparse.ArgumentParser) -> None:
    """``--lag-time-budget``: how many lagging queues/partitions a live read reads lag seconds of."""
    p.add_argument(
        "--lag-time-budget",
        type=int,
        default=1000,
        help="lagging queues/partitions whose oldest unconsumed message is read, most lagging first (default: 1000)",
    )


def iso_time(text: str | None, flag: str) -> dt.datetime | None:
    """``--flag``'s ISO time (UTC unless it says otherwise), ``None`` when not given.

    >>> iso_time("2026-11-25T03:00", "--to").isoformat()
    '2026-11-25T03:00:00+00:00'
    """
    if text is None:
        return None
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{flag}: expected an ISO time like 2026-11-25T03:00, got {text!r}", text) from None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def request_timeout(args: argparse.Namespace) -> float:
    """``--timeout`` of :func:`add_live_options` (default 3 s), > 0."""
    timeout = 3.0 if args.timeout is None else args.timeout
    if not timeout > 0:
        raise UsageError(f"--timeout: must be > 0 s, got {args.timeout}", args.timeout)
    return float(timeout)


#: The environment variables of the ACL credentials (not options: a secret on the command line shows in ``ps``).
ACL_VARIABLES = ("MQBALANCE_ACCESS_KEY", "MQBALANCE_SECRET_KEY")


def acl_credentials() -> AclCredentials | None:
    """ACL credentials from :data:`ACL_VARIABLES`, both or neither."""
    from mqbalance.remoting import AclCredentials

    access, secret = (os.environ.get(name) for name in ACL_VARIABLES)
    if not access and not secret:
        return None
    if not access or not secret:
        raise UsageError(f"set both {' and '.join(ACL_VARIABLES)}, or neither", None)
    return AclCredentials(access, secret)


def add_command_config(p: argparse.ArgumentParser, *, requires: str = "") -> None:
    """``--command-config FILE``: a Kafka client properties file, as Kafka's own tools take it."""
    p.add_argument(
        "--command-config",
        metavar="FILE",
        help=(f"{requires}" if requires else "")
        + "a Kafka client properties file for a secured cluster, as Kafka's tools take it: security.protocol "
        "(SSL, SASL_PLAINTEXT, SASL_SSL), sasl.mechanism (PLAIN, SCRAM-SHA-256/512), sasl.jaas.config, "
        "ssl.truststore.location / ssl.keystore.location with type PEM, ssl.key.password, "
        "ssl.endpoint.identification.algorithm (secrets go in this file, never on the command line)",
    )


def command_config(args: argparse.Namespace) -> dict[str, Any]:
    """kafka-python's security settings from ``--command-config`` (none when it is not given)."""
    if not args.command_config:
        return {}
    from mqbalance.kafka.client_config import load_client_config

    return load_client_config(args.command_config)


def warn(message: str, lines: list[str] | None = None) -> None:
    """``mqbalance: warning: ...`` on standard error, with indented detail lines."""
    print(f"mqbalance: warning: {message}", file=sys.stderr)
    for line in lines or ():
        print(f"  {line}", file=sys.stderr)
