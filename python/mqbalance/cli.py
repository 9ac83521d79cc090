"""Command line.

``mqbalance audit [SNAPSHOT] [--previous SNAPSHOT] [--out DIR] [--master URL] [--fail-on KINDS]
[--what-if STRATEGIES]`` — the main job: the owner of every readable queue of every (group, topic)
computed on Spark as the clients compute it, and the audit of it (see :mod:`mqbalance.fleet`), with
what switching strategy would do (``--what-if``). Without ``SNAPSHOT`` it audits the bundled
example fleet (:mod:`mqbalance.fleet.rocketmq.example`) against its previous state.

``mqbalance assign [SNAPSHOT]`` — the same assignment in-process (no Spark), summarised per group.

``mqbalance snapshot --namesrv HOST:PORT[;HOST:PORT] -o fleet.json|DIR`` — read a live RocketMQ
cluster (topics, routes, groups, connections, reported strategies, committed offsets) into a
snapshot (:mod:`mqbalance.fleet.rocketmq.live`): JSON, or the Parquet layout for any other ``-o``. Brokers
that did not answer are listed in the snapshot and on stderr. ``audit`` and ``assign`` take
``--namesrv`` instead of a snapshot file to read the cluster directly. With
``MQBALANCE_ACCESS_KEY`` and ``MQBALANCE_SECRET_KEY`` set, every request is signed (ACL).

``mqbalance snapshot --bootstrap HOST:PORT[,HOST:PORT] -o fleet.json`` — read a live Kafka cluster
(topics, consumer groups with their members' subscriptions and assignments, committed and log-end
offsets) into a Kafka snapshot (:mod:`mqbalance.fleet.kafka.live`). ``audit`` and ``assign`` take
either kind of snapshot file and tell them apart; a Kafka one is audited in-process
(:mod:`mqbalance.fleet.kafka.audit`) into the same outputs.

``mqbalance watch --namesrv HOST:PORT --out DIR [--interval 10s] [--offsets-interval 60s]`` — watch
a live RocketMQ cluster until stopped: every change of membership and queue ownership, and the
offsets, into a history dataset (:mod:`mqbalance.history`), continued after a restart.

``mqbalance fault-latency-demo`` — the two-broker latency experiment: how the producer's
``MQFaultStrategy`` isolates slow brokers, pre-4.9 loop vs 4.x vs 5.x.

``mqbalance simulate SCENARIO [--strategy S,S...] [--out DIR] [--seed N] [--client-ids L]`` — run a rebalance
scenario (a YAML/JSON file or a bundled name, see ``--list``) through :mod:`mqbalance.sim`:
``metrics.json``, ``timeline.png`` and ``queues.png`` per strategy, ``compare.json`` and
``compare.png`` when several strategies run.

``mqbalance consume --namesrv HOST:PORT --group G --topic T --strategy S`` — one consumer-group
member on a real RocketMQ cluster, recording what it processed (see :mod:`mqbalance.rocketmq.cli`).

Exit codes: 0 done; 2 bad input (the message names file and field); 3 findings of a kind listed
in ``--fail-on`` (``--fail-on-unowned`` for ``assign``; ``--fail-on-unstable`` for ``simulate``:
a group that never again had every queue pulled exactly once after some event).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import os
import signal
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from mqbalance.allocation.registry import StrategySpec
from mqbalance.exceptions import MQBalanceError
from mqbalance.fleet.errors import SnapshotError
from mqbalance.fleet.kafka.snapshot import KafkaSnapshot, kafka_snapshot_from_dict, load_kafka_snapshot, snapshot_kind
from mqbalance.fleet.rocketmq.files import load_snapshot
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
from mqbalance.fleet.rocketmq.snapshot import Snapshot
from mqbalance.fleet.rocketmq.what_if import DEFAULT_WHAT_IF
from mqbalance.progress import Progress

if TYPE_CHECKING:
    from mqbalance.fleet.findings import AuditResult
    from mqbalance.remoting import AclCredentials

__all__ = ["SnapshotError", "main"]


def _writable_dir(path: str, flag: str) -> Path:
    """Create ``path`` (and parents) and prove a file can be written in it — before any work, so
    an unusable output path fails in a second, not after the whole job."""
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".mqbalance-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise SnapshotError(f"{flag} {path}: cannot write there: {e.strerror or e}", path) from None
    return out


def _example(seed: int) -> tuple[Snapshot, Snapshot]:
    from mqbalance.fleet.rocketmq.example import example_pair

    previous, current = example_pair(seed)
    return snapshot_from_dict(current, f"example fleet (seed {seed})"), snapshot_from_dict(
        previous, f"example fleet before changes (seed {seed})"
    )


def _credentials() -> AclCredentials | None:
    """ACL credentials from ``MQBALANCE_ACCESS_KEY`` / ``MQBALANCE_SECRET_KEY`` (not options: a
    secret on the command line shows in ``ps``)."""
    from mqbalance.remoting import AclCredentials

    access, secret = os.environ.get("MQBALANCE_ACCESS_KEY"), os.environ.get("MQBALANCE_SECRET_KEY")
    if not access and not secret:
        return None
    if not access or not secret:
        raise SnapshotError("set both MQBALANCE_ACCESS_KEY and MQBALANCE_SECRET_KEY, or neither", None)
    return AclCredentials(access, secret)


def _live(args: argparse.Namespace, say: Progress) -> Snapshot:
    """The live snapshot of ``--namesrv``; its read errors are printed on stderr."""
    from mqbalance.fleet.rocketmq.live import live_snapshot

    if args.timeout is not None and not args.timeout > 0:
        raise SnapshotError(f"--timeout: must be > 0 s, got {args.timeout}", args.timeout)
    snap = live_snapshot(
        args.namesrv,
        timeout=args.timeout or 3.0,
        running_info=not args.no_running_info,
        progress=say,
        credentials=_credentials(),
    )
    _warn_partial(snap)
    return snap


def _warn_partial(snap: Snapshot | KafkaSnapshot) -> None:
    lines = snap.error_lines()
    if lines:
        print(f"mqbalance: warning: {snap.source} is partial, {len(lines)} read error(s):", file=sys.stderr)
        for line in lines:
            print(f"  {line}", file=sys.stderr)


def _snapshot_arg(args: argparse.Namespace, say: Progress) -> Snapshot | None:
    if args.namesrv and args.snapshot:
        raise SnapshotError("give a snapshot file or --namesrv, not both", args.snapshot)
    if args.namesrv:
        return _live(args, say)
    if args.snapshot:
        snap = load_snapshot(args.snapshot)
        _warn_partial(snap)
        return snap
    return None


def _check_out(out: Path) -> None:
    """``-o`` can be written: its parent directory exists (or is created) and is writable, and it is
    not a file where a directory goes or the other way round. An OSError names the path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if not os.access(out.parent, os.W_OK):
        raise SnapshotError(f"-o {out}: {out.parent} is not writable", str(out))
    if out.suffix.lower() == ".json" and out.is_dir():
        raise SnapshotError(f"-o {out}: is a directory, not a JSON file", str(out))
    if out.suffix.lower() != ".json" and out.exists() and not out.is_dir():
        raise SnapshotError(f"-o {out}: is a file, not a directory for the Parquet layout", str(out))


def _cmd_snapshot(args: argparse.Namespace) -> int:
    from mqbalance.fleet.rocketmq.files import write_parquet
    from mqbalance.fleet.rocketmq.live import read_cluster

    if bool(args.namesrv) == bool(args.bootstrap):
        raise SnapshotError("give --namesrv (RocketMQ) or --bootstrap (Kafka), one of them", args.namesrv)
    timeout = 3.0 if args.timeout is None else args.timeout
    if not timeout > 0:
        raise SnapshotError(f"--timeout: must be > 0 s, got {args.timeout}", args.timeout)
    out = Path(args.out)
    _check_out(out)  # before the cluster is read, which may take minutes
    say = Progress(quiet=args.quiet, stream=sys.stderr)
    if args.bootstrap:
        return _kafka_snapshot(args, out, timeout, say)
    if args.group:
        raise SnapshotError("--group goes with --bootstrap (a RocketMQ snapshot reads every group)", args.group)
    data = read_cluster(
        args.namesrv,
        timeout=timeout,
        running_info=not args.no_running_info,
        progress=say,
        credentials=_credentials(),
    )
    snap = snapshot_from_dict(data, f"rocketmq://{args.namesrv}")  # validated before anything is written
    if out.suffix.lower() == ".json":
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        write_parquet(snap, out)
    print(
        f"{out}: {len(data['topics']):,} topics, {snap.readable_queue_count():,} readable queues, "
        f"{len(data['groups']):,} groups online ({data['meta']['groupsOffline']:,} offline), "
        f"{snap.connections.num_rows:,} connections, {snap.offsets.num_rows:,} committed offsets"
    )
    _warn_partial(snap)
    return 4 if args.fail_on_partial and snap.errors.num_rows else 0


def _kafka_snapshot(args: argparse.Namespace, out: Path, timeout: float, say: Progress) -> int:
    from mqbalance.fleet.kafka.live import read_kafka_cluster

    if out.suffix.lower() != ".json":
        raise SnapshotError(f"-o {out}: a Kafka snapshot is written as JSON (-o fleet.json)", str(out))
    data = read_kafka_cluster(args.bootstrap, timeout=timeout, groups=args.group, progress=say)
    snap = kafka_snapshot_from_dict(data, f"kafka://{args.bootstrap}")  # validated before anything is written
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    members = sum(len(g.members) for g in snap.groups.values())
    print(
        f"{out}: {len(snap.topics):,} topics, {snap.partition_count():,} partitions, {len(snap.groups):,} groups, "
        f"{members:,} members, {len(snap.committed):,} committed offsets"
    )
    _warn_partial(snap)
    return 4 if args.fail_on_partial and snap.errors else 0


def _kafka_snapshot_arg(args: argparse.Namespace) -> KafkaSnapshot | None:
    """The Kafka snapshot named on the command line, or ``None`` for a RocketMQ one (or none)."""

    if not args.snapshot or snapshot_kind(args.snapshot) != "kafka":
        return None
    if args.namesrv:
        raise SnapshotError("give a snapshot file or --namesrv, not both", args.snapshot)
    snap = load_kafka_snapshot(args.snapshot)
    _warn_partial(snap)
    return snap


def _cmd_assign_kafka(args: argparse.Namespace, snap: KafkaSnapshot) -> int:
    from mqbalance.fleet import FindingKind
    from mqbalance.fleet.kafka.audit import audit_kafka

    result = audit_kafka(snap, what_if=())
    print(f"{snap.source}: {len(snap.groups)} groups")
    t = result.totals
    print(
        f"fleet: {t.queues_assigned:,} partitions in {t.group_topics:,} group/topic pairs, "
        f"{t.processes:,} members; assigned to nobody {t.unowned_queues:,}, twice {t.double_owned_queues:,}, "
        f"idle members {t.idle_processes:,}, lag {t.lag:,}, rebalancing groups {t.rebalancing_groups:,}"
    )
    header = (
        f"{'group':<20} {'topic':<22} {'parts':>6} {'membrs':>6} {'min':>4} {'max':>4} {'nobody':>7} {'twice':>6} "
        f"{'lag':>10}  notes"
    )
    print(header)
    print("-" * len(header))
    groups = snap.groups
    lines = []
    for r in result.rows:
        notes = []
        group = groups[r.group]
        if not group.stable:
            notes.append(group.state)
        if group.members and not group.metadata_known:
            notes.append("members' assignments not returned by the broker")
        if r.idle_consumers:
            notes.append(f"{r.idle_consumers} idle")
        risk = r.unowned + r.double_owned
        line = (
            f"{r.group:<20} {r.topic:<22} {r.units:>6} {r.consumers:>6} {r.min_load:>4} {r.max_load:>4} "
            f"{r.unowned:>7} {r.double_owned:>6} {r.lag or 0:>10}  {'; '.join(notes)}"
        )
        lines.append((risk, r.idle_consumers, r.group, r.topic, line))
    if args.top is None:
        shown = sorted(lines, key=lambda x: (x[2], x[3]))
    else:
        shown = sorted(lines, key=lambda x: (-x[0], -x[1], x[2], x[3]))[: args.top]
    for *_, line in shown:
        print(line)
    if len(shown) < len(lines):
        print(f"... {len(lines) - len(shown):,} more group/topic pairs (--top)")
    return 3 if args.fail_on_unowned and result.count(FindingKind.UNOWNED) else 0


def _cmd_audit_kafka(args: argparse.Namespace, snap: KafkaSnapshot, fail_on: list[str], say: Progress) -> int:
    from mqbalance.fleet import write_outputs
    from mqbalance.fleet.kafka.audit import KAFKA_WHAT_IF, audit_kafka, kafka_what_if_candidates
    from mqbalance.fleet.kafka.spark import audit_kafka_on_spark

    prev = None
    if args.previous:
        if snapshot_kind(args.previous) != "kafka":
            raise SnapshotError(
                f"--previous {args.previous}: not a Kafka snapshot, and {snap.source} is one", args.previous
            )
        prev = load_kafka_snapshot(args.previous)
    what_if: tuple[str, ...] = KAFKA_WHAT_IF if args.what_if is None else ()
    if args.what_if is not None and args.what_if.strip().lower() != "none":
        what_if = kafka_what_if_candidates(args.what_if)
    say(f"loaded {snap.source}: {len(snap.groups)} groups, {snap.partition_count():,} partitions")
    if args.master or args.remote:
        from mqbalance.fleet.spark import session

        if args.master and args.remote:
            raise SnapshotError("--remote and --master: give one (a Spark Connect server or a master URL)", args.remote)
        say(f"starting Spark ({args.remote or args.master}); the groups are audited in the executors")
        with session(args.master, remote=args.remote, conf=_spark_conf(args)) as spark:
            result = audit_kafka_on_spark(spark, snap, prev, what_if, partitions=args.partitions)
    else:  # one row per (group, topic): in-process unless a Spark master is named
        result = audit_kafka(snap, prev, what_if)
    write_outputs(result, args.out, source=snap.source, snapshot_errors=snap.error_lines())
    say(f"wrote {args.out}/ (report.md, report.html, findings.json/.csv, group_topics.csv, plots)")
    print()
    print(f"fleet: {result.totals.queues_assigned:,} partitions, {result.totals.groups:,} groups")
    for kind, n in Counter(f.kind.value for f in result.findings).most_common():
        print(f"  {kind}: {n}")
    return _fail_on_exit(result, fail_on)


def _fail_on_exit(result: AuditResult, fail_on: list[str]) -> int:
    """Exit code 3, said on stderr, when the audit found a kind listed in ``--fail-on``."""
    failing = [k for k in fail_on if result.count(k)]
    if failing:
        print(f"failing on: {', '.join(failing)}", file=sys.stderr)
        return 3
    return 0


def _duration_s(text: str, flag: str) -> float:
    """``10s``, ``1.5m``, ``2h``, ``7d`` or plain seconds, as seconds (> 0)."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    value = text.strip().lower()
    scale = units.get(value[-1:])
    number = value[:-1] if scale is not None else value
    try:
        seconds = float(number) * (scale or 1.0)
    except ValueError:
        raise SnapshotError(f"{flag}: expected a duration like 10s, 5m, 2h or 7d, got {text!r}", text) from None
    if not 0 < seconds < 10**8:
        raise SnapshotError(f"{flag}: must be a positive duration, got {text!r}", text)
    return seconds


def _cmd_watch(args: argparse.Namespace) -> int:
    from mqbalance.history.collector import Collector
    from mqbalance.history.metrics import WatchMetrics

    say = Progress(quiet=args.quiet, stream=sys.stderr)
    metrics = None
    if args.metrics_port is not None:
        if not 0 < args.metrics_port < 65536:
            raise SnapshotError(f"--metrics-port: must be 1-65535, got {args.metrics_port}", args.metrics_port)
        metrics = WatchMetrics()
    collector = Collector(
        args.namesrv,
        args.out,
        interval=_duration_s(args.interval, "--interval"),
        offsets_interval=_duration_s(args.offsets_interval, "--offsets-interval"),
        checkpoint_every=_duration_s(args.checkpoint_every, "--checkpoint-every"),
        retain=_duration_s(args.retain, "--retain"),
        timeout=args.timeout,
        running_info=not args.no_running_info,
        say=say,
        metrics=metrics,
    )
    if metrics is not None:
        metrics.serve(args.metrics_port, args.metrics_addr)
        say(f"metrics on http://{args.metrics_addr}:{args.metrics_port}/metrics")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda _s, _f: stop.set())
    say(f"watching {args.namesrv} into {args.out} (continuing after tick {collector.writer.last_tick})")
    ticks = collector.run(stop)
    say(f"stopped after {ticks} tick(s); last tick {collector.writer.last_tick}")
    return 0


def _when(text: str | None, flag: str) -> dt.datetime | None:
    if text is None:
        return None
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise SnapshotError(f"{flag}: expected an ISO time like 2026-11-25T03:00, got {text!r}", text) from None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def _cmd_history(args: argparse.Namespace) -> int:
    from mqbalance.fleet.spark import session
    from mqbalance.history.job import analyse
    from mqbalance.history.report import write_history_outputs
    from mqbalance.history.writer import open_history

    open_history(args.dir, create=False)  # one line before Spark starts when it is not a history
    start, end = _when(args.since, "--from"), _when(args.until, "--to")
    window = _duration_s(args.window, "--window")
    span = dt.timedelta(seconds=_duration_s(args.span, "--span"))
    for flag, value in (("--min-cycles", args.min_cycles), ("--min-episodes", args.min_episodes)):
        if value < 1:
            raise SnapshotError(f"{flag}: must be at least 1, got {value}", value)
    say = Progress(quiet=args.quiet, stream=sys.stderr)
    if args.master and args.remote:
        raise SnapshotError("--remote and --master: give one (a Spark Connect server or a master URL)", args.remote)
    say(f"starting Spark ({args.remote or args.master or 'local[2]'})")
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


def _cmd_assign(args: argparse.Namespace) -> int:
    from mqbalance.fleet import FindingKind, audit_snapshot

    kafka = _kafka_snapshot_arg(args)
    if kafka is not None:
        if args.top is not None and args.top < 0:
            raise SnapshotError(f"--top: must be >= 0, got {args.top}", args.top)
        return _cmd_assign_kafka(args, kafka)

    if args.top is not None and args.top < 0:
        raise SnapshotError(f"--top: must be >= 0, got {args.top}", args.top)
    say = Progress(quiet=args.quiet, stream=sys.stderr)  # stdout is the table
    snap = _snapshot_arg(args, say) or _example(args.seed)[0]
    say(f"loaded {snap.source}: {len(snap.groups):,} groups, {snap.readable_queue_count():,} readable queues")
    with say.counter("assigning", "queues") as update:
        result = audit_snapshot(snap, progress=update)
    rows = {(r.group, r.topic): r for r in result.rows}
    groups = snap.consumer_groups()
    lines = []  # (queues at risk, idle, missing route, group, topic, line)
    for g, t in snap.subscription_pairs():
        group = groups.get(g)
        procs = len(group.connections) if group else 0
        row = rows.get((g, t))
        if row is None:
            note = "no readable queue (missing route)"
            lines.append((0, 0, 1, g, t, f"{g:<20} {t:<22} {0:>6} {procs:>5} {'':>4} {'':>4} {'':>7} {'':>7}  {note}"))
            continue
        notes = []
        if group and group.duplicated_ids:
            notes.append(f"duplicated id {', '.join(group.duplicated_ids)}")
        if row.unowned:
            notes.append(f"{row.unowned} queues consumed by nobody")
        if row.double_owned and row.message_model == "CLUSTERING":
            notes.append(f"{row.double_owned} consumed twice")
        if row.idle_consumers and row.message_model == "CLUSTERING":
            notes.append(f"{row.idle_consumers} idle")
        risk = row.unowned + (row.double_owned if row.message_model == "CLUSTERING" else 0)
        idle = row.idle_consumers if row.message_model == "CLUSTERING" else 0
        line = (
            f"{g:<20} {t:<22} {row.units:>6} {procs:>5} {row.min_load:>4} {row.max_load:>4} "
            f"{row.unowned:>7} {row.double_owned:>7}  {'; '.join(notes)}"
        )
        lines.append((risk, idle, 0, g, t, line))
    print(f"{snap.source}: {len(snap.groups)} groups")
    totals = result.totals
    print(
        f"fleet: {totals.queues_assigned:,} queues in {totals.group_topics:,} group/topic pairs, "
        f"{totals.processes:,} processes; unowned {totals.unowned_queues:,}, consumed twice "
        f"{totals.double_owned_queues:,}, idle processes {totals.idle_processes:,}, duplicated ids "
        f"{totals.duplicated_client_ids:,}, missing routes {totals.missing_routes:,}"
    )
    columns = f"{'queues':>6} {'procs':>5} {'min':>4} {'max':>4} {'unowned':>7} {'twice':>7}"
    header = f"{'group':<20} {'topic':<22} {columns}  notes"
    print(header)
    print("-" * len(header))
    if args.top is None:
        shown = sorted(lines, key=lambda x: (x[3], x[4]))
    else:  # the worst first: queues at risk, then idle processes, then missing routes
        shown = sorted(lines, key=lambda x: (-x[0], -x[1], -x[2], x[3], x[4]))[: args.top]
    for *_, line in shown:
        print(line)
    if len(shown) < len(lines):
        print(f"... {len(lines) - len(shown):,} more group/topic pairs (--top)")
    return 3 if args.fail_on_unowned and result.count(FindingKind.UNOWNED) else 0


def _spark_conf(args: argparse.Namespace) -> dict[str, str]:
    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SnapshotError(f"--conf: expected KEY=VALUE, got {item!r}", item)
        conf[key.strip()] = value
    if args.executor_memory:
        conf["spark.executor.memory"] = args.executor_memory
    if args.partitions is not None and args.partitions < 1:
        raise SnapshotError(f"--partitions: must be >= 1, got {args.partitions}", args.partitions)
    return conf


#: ``audit`` tries the default what-if candidates unasked up to this many readable queues.
WHAT_IF_DEFAULT_MAX_QUEUES = 100_000


def _what_if(option: str | None, snap: Snapshot, say: Progress) -> tuple[StrategySpec, ...]:
    """The candidate strategies of ``--what-if`` (``none``: off; unset: the defaults on fleets of up
    to :data:`WHAT_IF_DEFAULT_MAX_QUEUES` readable queues)."""
    from mqbalance.fleet import DEFAULT_WHAT_IF, what_if_candidates

    if option is None:
        if snap.readable_queue_count() > WHAT_IF_DEFAULT_MAX_QUEUES:
            say(f"what-if skipped above {WHAT_IF_DEFAULT_MAX_QUEUES:,} queues (--what-if {','.join(DEFAULT_WHAT_IF)})")
            return ()
        option = ",".join(DEFAULT_WHAT_IF)
    if option.strip().lower() == "none":
        return ()
    return what_if_candidates(option)


def _cmd_audit(args: argparse.Namespace) -> int:
    from mqbalance.fleet import FINDING_KINDS, write_outputs
    from mqbalance.fleet.report import what_if_summary
    from mqbalance.fleet.rocketmq.spark import assign_fleet, audit_fleet
    from mqbalance.fleet.shipping import environment_archive, explain_executor_errors
    from mqbalance.fleet.spark import is_connect, session

    fail_on = [k for k in (args.fail_on or "").split(",") if k]
    unknown = [k for k in fail_on if k not in FINDING_KINDS]
    if unknown:
        raise SnapshotError(f"--fail-on: unknown kind(s) {unknown}; known: {', '.join(FINDING_KINDS)}", unknown)
    say = Progress(quiet=args.quiet)
    _writable_dir(args.out, "--out")
    kafka = _kafka_snapshot_arg(args)
    if kafka is not None:
        return _cmd_audit_kafka(args, kafka, fail_on, say)
    live = _snapshot_arg(args, say)
    if live is not None:
        snap = live
        prev = load_snapshot(args.previous) if args.previous else None
    else:
        snap, prev = _example(args.seed)
    say(
        f"loaded {snap.source}: {len(snap.groups)} groups, {snap.readable_queue_count():,} readable queues"
        + (f"; previous: {prev.source}" if prev else "")
    )
    if args.remote and args.master:
        raise SnapshotError("--remote and --master: give one (a Spark Connect server or a master URL)", args.remote)
    say(f"starting Spark ({args.remote or args.master or 'local[2]'})")
    ship = args.ship_environment and not args.remote and not (args.master or "local").startswith("local")
    if args.ship_environment and not ship:
        say("local mode: the executors run this Python already; --ship-environment ignored")
    if ship:
        environment_archive(progress=say)  # packs it (or finds it in the cache) before Spark starts
    what_if = _what_if(args.what_if, snap, say)
    conf = _spark_conf(args)
    # The driver holds the snapshot's tables and a few fact rows per (group, topic), never a row per queue.
    driver_memory = args.driver_memory or f"{2 + snap.readable_queue_count() // 50_000_000}g"
    with (
        explain_executor_errors(),
        session(
            args.master, remote=args.remote, ship_environment=ship, driver_memory=driver_memory, conf=conf
        ) as spark,
    ):
        remote = is_connect(spark)
        stages = (lambda what: contextlib.nullcontext()) if remote else (lambda what: say.spark_stages(spark, what))
        target = Path(args.out) / "assignments"
        # Local executors write the assignment rows as they compute them; a cluster's executors may
        # not share this file system, so there Spark writes them in a second pass.
        in_tasks = not args.no_assignments and not remote and spark.sparkContext.master.startswith("local")
        say("assigning and auditing every (group, topic) in the executors")
        with stages("audit"):
            result = audit_fleet(
                spark,
                snap,
                partitions=args.partitions,
                previous=prev,
                what_if=what_if,
                assignments_dir=target if in_tasks else None,
            )
        say(f"audited {len(result.rows):,} group/topic pairs, {result.totals.queues_assigned:,} queues")
        paths = write_outputs(result, args.out, source=snap.source, snapshot_errors=snap.error_lines())
        say(f"wrote {args.out}/ (report.md, report.html, findings.json/.csv, group_topics.csv, plots)")
        if not args.no_assignments and not in_tasks:
            with stages("assignments"):
                assign_fleet(spark, snap, partitions=args.partitions).write.mode("overwrite").parquet(str(target))
        if not args.no_assignments:
            say(f"wrote {target}/ (one row per queue and consuming process, Parquet)")
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
    return _fail_on_exit(result, fail_on)


def _cmd_simulate(args: argparse.Namespace) -> int:
    from mqbalance.sim import bundled_scenarios, compare, load_scenario, scenario_strategy

    if args.list:
        for name, path in bundled_scenarios().items():
            print(f"{name:<26} {load_scenario(path).description.strip()}")
        return 0
    if not args.scenario:
        raise SnapshotError("simulate: give a scenario file or one of: " + ", ".join(bundled_scenarios()))
    scenario = load_scenario(args.scenario)
    if args.seed is not None:
        scenario = dataclasses.replace(scenario, seed=args.seed)
    if args.client_ids is not None:
        scenario = dataclasses.replace(
            scenario, broker=dataclasses.replace(scenario.broker, client_ids=args.client_ids)
        )
    names = [n.strip() for n in (args.strategy or "").split(",") if n.strip()] or None
    for n in names or ():  # the same check a scenario file's strategy gets, before anything runs
        scenario_strategy(n, f"--strategy {n}")
    say = Progress()
    out = _writable_dir(str(Path(args.out) / scenario.name), "--out")
    say(f"{scenario.name}: {scenario.duration_ms / 60_000:g} simulated min per strategy")
    results = compare(
        scenario,
        names,
        progress=lambda now, end: (
            say(f"  simulated {now / 60_000:.0f}/{end / 60_000:.0f} min")
            if now % 600_000 < scenario.sample_interval_ms
            else None
        ),
    )
    for result in results:
        folder = out / result.strategy if len(results) > 1 else out
        written = [result.write_json(folder / "metrics.json")]
        try:
            from mqbalance.sim.plot import plot_result

            written += plot_result(result, folder)
        except ImportError:
            say("matplotlib is not installed (pip install 'mqbalance[plot]'): plots skipped")
        print(result.format())
        say(f"wrote {', '.join(str(p) for p in written)}")
    if len(results) > 1:
        table = [
            {
                "strategy": r.strategy,
                **{
                    k: r.summary[k]
                    for k in (
                        "duplicates",
                        "lost",
                        "pause_queue_s",
                        "max_queue_pause_s",
                        "owned_twice_queue_s",
                        "max_time_to_stable_s",
                        "max_backlog",
                        "backlog_end",
                    )
                },
            }
            for r in results
        ]
        (out / "compare.json").write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
        print()
        w = max(18, *(len(row["strategy"]) for row in table))
        print(
            f"{'strategy':<{w}} {'duplicates':>10} {'pause q-s':>10} {'twice q-s':>10} {'to stable s':>11} "
            f"{'max backlog':>11}"
        )
        for row in table:
            stable = "never" if row["max_time_to_stable_s"] is None else f"{row['max_time_to_stable_s']:.1f}"
            print(
                f"{row['strategy']:<{w}} {row['duplicates']:>10,} {row['pause_queue_s']:>10,.1f} "
                f"{row['owned_twice_queue_s']:>10,.1f} {stable:>11} {row['max_backlog']:>11,}"
            )
        try:
            from mqbalance.sim.plot import plot_comparison

            say(f"wrote {out / 'compare.json'}, {plot_comparison(results, out)}")
        except ImportError:
            say(f"wrote {out / 'compare.json'} (matplotlib missing: no compare.png)")
    unstable = [(r.strategy, e) for r in results for e in r.summary["never_stable_after"]]
    if args.fail_on_unstable and unstable:
        print("never stable after: " + "; ".join(f"{e} [{s}]" for s, e in unstable), file=sys.stderr)
        return 3
    return 0


def _one_line(message: str) -> str:
    return " ".join(message.split("\n")) if "\n" in message else message


def _live_options(p: argparse.ArgumentParser, *, required: bool) -> None:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mqbalance", description="Consumer-group load balancing, exactly as the Java clients compute it."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    au = sub.add_parser(
        "audit", help="the main job: assign every group/topic of a fleet snapshot on Spark and audit it"
    )
    au.add_argument(
        "snapshot", nargs="?", help="snapshot JSON file or Parquet directory (default: the bundled example fleet)"
    )
    au.add_argument("--previous", help="an earlier snapshot, for churn")
    au.add_argument("--out", default="out/audit", help="output directory (default: out/audit)")
    au.add_argument("--master", help="Spark master URL (default: local[2])")
    au.add_argument("--remote", metavar="sc://HOST:PORT", help="run on a Spark Connect server instead of --master")
    au.add_argument("--partitions", type=int, help="Spark partitions of the work (default: one per core)")
    au.add_argument("--driver-memory", help="Spark driver memory, e.g. 4g (default: 2g, +1g per 5×10^7 queues)")
    au.add_argument("--executor-memory", help="Spark executor memory on a cluster, e.g. 4g")
    au.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="any Spark setting (repeatable)")
    au.add_argument(
        "--no-assignments", action="store_true", help="skip writing assignments/ (one Parquet row per queue)"
    )
    au.add_argument(
        "--ship-environment",
        action="store_true",
        help="for clusters whose workers lack mqbalance: pack this Python environment (mqbalance with its compiled "
        "core, numpy, pyarrow, pandas, pyyaml; about 100 MB) and ship it to the executors as spark.archives. "
        "Costs about 10 s to pack on the first run (cached under ~/.cache/mqbalance, reused until mqbalance or a "
        "dependency changes) and an upload to every executor on every run. The workers need this OS, CPU "
        "architecture and base Python at the same path. Ignored in local mode",
    )
    au.add_argument(
        "--fail-on", help="comma-separated finding kinds that make the exit code 3, e.g. unowned,double-owned"
    )
    au.add_argument(
        "--what-if",
        metavar="STRATEGIES",
        help="comma-separated strategies to try on every clustering group: queues that would move on a switch, "
        "max load, idle processes (a report section; computed in the same executor pass, about 1x the assignment's "
        f"work per candidate, more for STICKY). Default: {','.join(DEFAULT_WHAT_IF)} on fleets of up to 10^5 "
        "readable queues; 'none' turns it off",
    )
    au.add_argument("--seed", type=int, default=7, help="seed of the bundled example fleet")
    au.add_argument("--quiet", action="store_true", help="no progress lines")
    a = sub.add_parser("assign", help="who consumes which queue, per group and topic, in-process")
    a.add_argument(
        "snapshot", nargs="?", help="snapshot JSON file or Parquet directory (default: the bundled example fleet)"
    )
    for p in (au, a):
        _live_options(p, required=False)
    sn = sub.add_parser(
        "snapshot",
        help="read a live RocketMQ cluster (--namesrv) or Kafka cluster (--bootstrap) into a snapshot file",
    )
    _live_options(sn, required=False)
    sn.add_argument(
        "--bootstrap",
        metavar="HOST:PORT[,HOST:PORT]",
        help="read the live Kafka cluster behind these brokers instead (kafka-python's admin client; -o must be .json)",
    )
    sn.add_argument(
        "--group",
        action="append",
        default=[],
        help="with --bootstrap: a consumer group to describe even if the broker does not list it (repeatable)",
    )
    sn.add_argument(
        "-o", "--out", required=True, help="fleet.json (JSON) or a directory, e.g. fleet.parquet (Parquet layout)"
    )
    sn.add_argument("--quiet", action="store_true", help="no progress lines")
    sn.add_argument(
        "--fail-on-partial", action="store_true", help="exit 4 when some broker or request could not be read"
    )
    w = sub.add_parser(
        "watch", help="watch a live RocketMQ cluster: membership and queue ownership changes into a history dataset"
    )
    _live_options(w, required=True)
    w.add_argument("--out", required=True, help="the history directory (created, or continued after a restart)")
    w.add_argument("--interval", default="10s", help="membership and ownership every (default: 10s)")
    w.add_argument("--offsets-interval", default="60s", help="committed and max offsets every (default: 60s)")
    w.add_argument("--checkpoint-every", default="1h", help="write the whole state every (default: 1h)")
    w.add_argument("--retain", default="7d", help="delete hours of history older than this (default: 7d)")
    w.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port")
    w.add_argument("--metrics-addr", default="127.0.0.1", help="the address to serve them on (default: 127.0.0.1)")
    w.add_argument("--quiet", action="store_true", help="no progress lines")
    h = sub.add_parser("history", help="analyse a history dataset on Spark: rebalance episodes, flapping, queue health")
    h.add_argument("dir", help="the history directory `mqbalance watch` writes")
    h.add_argument("--out", default="out/history", help="output directory (default: out/history)")
    h.add_argument("--group", action="append", default=[], help="only this group (repeatable)")
    h.add_argument("--from", dest="since", help="episodes starting from this time (ISO, UTC unless given)")
    h.add_argument("--to", dest="until", help="data up to this time (ISO, UTC unless given)")
    h.add_argument("--window", default="60s", help="membership changes closer than this are one episode (60s)")
    h.add_argument("--min-cycles", type=int, default=3, help="join/leave cycles that make a client flapping (3)")
    h.add_argument("--min-episodes", type=int, default=5, help="episodes that make a group flapping (5)")
    h.add_argument("--span", default="6h", help="read the range this much at a time: memory follows it (6h)")
    h.add_argument("--master", help="Spark master URL (default: local[2])")
    h.add_argument("--remote", metavar="sc://HOST:PORT", help="a Spark Connect server instead of --master")
    h.add_argument("--quiet", action="store_true", help="no progress lines")
    a.add_argument("--fail-on-unowned", action="store_true", help="exit 3 when some queue is consumed by nobody")
    a.add_argument("--top", type=int, help="print only the N worst group/topic pairs (default: all, by name)")
    a.add_argument("--seed", type=int, default=7)
    a.add_argument("--quiet", action="store_true", help="no progress lines (they go to standard error)")
    f = sub.add_parser(
        "fault-latency-demo",
        help="the two-broker latency experiment: producer fault isolation (MQFaultStrategy), pre-4.9 vs 4.x vs 5.x",
    )
    f.add_argument("--rounds", type=int, default=10)
    sim = sub.add_parser(
        "simulate", help="simulate a consumer group through a rebalance scenario: duplicates, pauses, backlog, plots"
    )
    sim.add_argument(
        "scenario", nargs="?", help="a scenario file (.yaml/.yml/.json) or the name of a bundled one (see --list)"
    )
    sim.add_argument(
        "--strategy", help="comma-separated strategies to run instead of the scenario's (several: a comparison)"
    )
    sim.add_argument("--out", default="out/sim", help="output directory (default: out/sim; one folder per scenario)")
    sim.add_argument("--seed", type=int, help="override the scenario's seed")
    sim.add_argument(
        "--client-ids",
        choices=["per-connection", "per-client-id"],
        help="how the broker lists connections sharing a client id: per-connection (Java, the id twice: a share "
        "goes to nobody) or per-client-id (the Rust port: the id once, both take the same share); default: the "
        "scenario's broker.client_ids, else per-connection",
    )
    sim.add_argument("--list", action="store_true", help="list the bundled scenarios")
    sim.add_argument(
        "--fail-on-unstable", action="store_true", help="exit 3 when the group never settles after some event"
    )
    from mqbalance.coordination.cli import add_subcommands as _coordination_subcommands

    coordination_commands = _coordination_subcommands(sub)  # member, group status
    from mqbalance.rocketmq.cli import add_subcommands as _rocketmq_subcommands

    rocketmq_commands = _rocketmq_subcommands(sub)  # consume
    from mqbalance.kafka.cli import add_subcommands as _kafka_subcommands

    kafka_commands = _kafka_subcommands(sub)  # kafka-consume
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.command == "fault-latency-demo":
        from mqbalance.fault import demo

        if not 1 <= args.rounds <= 1_000_000:
            print(f"mqbalance: error: --rounds: must be between 1 and 1000000, got {args.rounds}", file=sys.stderr)
            return 2

        return demo.main(["--rounds", str(args.rounds)])
    commands = {
        "audit": _cmd_audit,
        "assign": _cmd_assign,
        "snapshot": _cmd_snapshot,
        "watch": _cmd_watch,
        "history": _cmd_history,
        "simulate": _cmd_simulate,
        **coordination_commands,
        **rocketmq_commands,
        **kafka_commands,
    }
    try:
        return commands[args.command](args)
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
    except KeyboardInterrupt:
        print("mqbalance: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
