"""Command line.

``mqbalance assign SNAPSHOT`` — who consumes which queue, as every client would compute it (queues
from READ-permission queue data, Java sort, the group's strategy).
``mqbalance fault-seed`` — seed 001's producer fault-isolation experiment.

Snapshot (JSON)::

    {"topics": {"<topic>": {"queueDatas": [{"brokerName", "readQueueNums", "writeQueueNums", "perm"}]}},
     "groups": [{"group", "messageModel": "CLUSTERING"|"BROADCASTING", "topics": [...],
                 "strategy": "AVG" | {"name": "CONSISTENT_HASH", "virtualNodeCnt": 10, ...},
                 "clients": ["<clientId>", ...]}]}

``mqbalance assign`` with no argument uses the bundled example snapshot.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from .exceptions import MQBalanceError
from .models import MessageQueue
from .ordering import sort_queues
from .strategies import AllocateStrategy, strategy

__all__ = ["main", "load_snapshot", "assign_snapshot", "SnapshotError"]

PERM_READ = 4


class SnapshotError(MQBalanceError, ValueError):
    """A snapshot file is malformed; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    group: str
    topic: str
    strategy: str
    queues: list[MessageQueue]
    owners: dict[str, list[MessageQueue]]
    duplicated_ids: list[str]

    @property
    def unowned(self) -> list[MessageQueue]:
        owned = {q for lst in self.owners.values() for q in lst}
        return [q for q in self.queues if q not in owned]


def _field(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise SnapshotError(f"{where}: missing field {key!r}", key)
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise SnapshotError(f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, got {value!r}", value)
    return value


def load_snapshot(path: str | Path | None) -> tuple[str, dict[str, Any]]:
    """Read a snapshot file (``None`` → the bundled example)."""
    if path is None:
        ref = files("mqbalance") / "data" / "example_snapshot.json"
        return "example_snapshot.json", json.loads(ref.read_text(encoding="utf-8"))
    p = Path(path)
    try:
        return str(p), json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise SnapshotError(f"{p}: {e}", str(p)) from e


def _readable_queues(name: str, route: Any, where: str) -> list[MessageQueue]:
    queues = []
    for k, qd in enumerate(_field(route, "queueDatas", list, where)):
        w = f"{where}.queueDatas[{k}]"
        broker = _field(qd, "brokerName", str, w)
        nums = _field(qd, "readQueueNums", int, w)
        perm = _field(qd, "perm", int, w)
        if nums < 0:
            raise SnapshotError(f"{w}.readQueueNums: must be >= 0, got {nums}", nums)
        if perm & PERM_READ:
            queues.extend(MessageQueue(name, broker, q) for q in range(nums))
    return queues


def _strategy(spec: Any, where: str) -> AllocateStrategy:
    if isinstance(spec, str):
        return strategy(spec)
    name = _field(spec, "name", str, where)
    params: dict[str, Any] = {}
    if "virtualNodeCnt" in spec:
        params["virtual_node_cnt"] = spec["virtualNodeCnt"]
    if "consumeridcs" in spec:
        params["consumer_idcs"] = spec["consumeridcs"]
    if "inner" in spec:
        params["inner"] = _strategy(spec["inner"], f"{where}.inner")
    return strategy(name, **params)


def assign_snapshot(source: str, snapshot: dict[str, Any]) -> list[TopicAssignment]:
    """Every (group, topic) assignment of a snapshot, as the clients compute it."""
    topics = _field(snapshot, "topics", dict, source)
    routes = {t: _readable_queues(t, r, f"{source}: topics[{t!r}]") for t, r in topics.items()}
    results = []
    for g, group in enumerate(_field(snapshot, "groups", list, source)):
        where = f"{source}: groups[{g}]"
        name = _field(group, "group", str, where)
        clients = _field(group, "clients", list, where)
        model = group.get("messageModel", "CLUSTERING")
        if model not in ("CLUSTERING", "BROADCASTING"):
            raise SnapshotError(f"{where}.messageModel: expected CLUSTERING or BROADCASTING, got {model!r}", model)
        s = _strategy(group.get("strategy", "AVG"), f"{where}.strategy")
        dup = sorted(c for c, n in Counter(clients).items() if n > 1)
        for topic in _field(group, "topics", list, where):
            if topic not in routes:
                raise SnapshotError(f"{where}.topics: no route for topic {topic!r}", topic)
            queues = sort_queues(routes[topic])
            if model == "BROADCASTING":
                owners = {c: list(queues) for c in dict.fromkeys(clients)}
            else:
                owners = s.assign(queues, clients, java_sort=True)
            results.append(TopicAssignment(name, topic, s.name, queues, owners, dup))
    return results


def _cmd_assign(args: argparse.Namespace) -> int:
    source, snapshot = load_snapshot(args.snapshot)
    results = assign_snapshot(source, snapshot)
    print(f"{source}: {len(results)} group/topic assignments")
    header = f"{'group':<16} {'topic':<14} {'strategy':<16} {'queues':>6} {'clients':>7} {'min':>4} {'max':>4} {'unowned':>7}  hazards"
    print(header)
    print("-" * len(header))
    problems = 0
    for r in results:
        sizes = [len(v) for v in r.owners.values()]
        hazards = []
        if r.duplicated_ids:
            hazards.append(f"duplicated id {', '.join(r.duplicated_ids)}")
        idle = sum(1 for s in sizes if s == 0)
        if idle:
            hazards.append(f"{idle} idle")
        if r.unowned:
            hazards.append(f"{len(r.unowned)} queues consumed by nobody")
            problems += 1
        print(f"{r.group:<16} {r.topic:<14} {r.strategy:<16} {len(r.queues):>6} {len(r.owners):>7} {min(sizes):>4} {max(sizes):>4} {len(r.unowned):>7}  {'; '.join(hazards)}")
    if args.json:
        out = [
            {"group": r.group, "topic": r.topic, "strategy": r.strategy,
             "owners": {c: [str(q) for q in lst] for c, lst in r.owners.items()},
             "unowned": [str(q) for q in r.unowned]}
            for r in results
        ]
        Path(args.json).write_text(json.dumps(out, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"wrote {args.json}")
    return 1 if (args.fail_on_unowned and problems) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mqbalance", description="Consumer-group load balancing, exactly as the Java clients compute it.")
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("assign", help="who consumes which queue, for every group and topic of a snapshot")
    a.add_argument("snapshot", nargs="?", help="snapshot JSON (default: the bundled example)")
    a.add_argument("--json", metavar="FILE", help="also write the full assignment as JSON")
    a.add_argument("--fail-on-unowned", action="store_true", help="exit 1 when some queue is consumed by nobody")
    f = sub.add_parser("fault-seed", help="seed 001's producer fault-isolation experiment, old loop vs 4.9.x vs 5.x")
    f.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    if args.command == "fault-seed":
        from .examples import fault_seed

        return fault_seed.main(["--rounds", str(args.rounds)])
    try:
        return _cmd_assign(args)
    except MQBalanceError as e:
        print(f"mqbalance: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
