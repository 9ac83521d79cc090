"""The collector behind ``mqbalance watch``: every tick, the live cluster read as a snapshot
(:func:`mqbalance.fleet.rocketmq.live.read_cluster`), the owner of every queue computed as the clients
compute it (:func:`mqbalance.fleet.rocketmq.assignment.assign_snapshot`), compared with the previous tick,
and only the changes written to the history dataset (:mod:`mqbalance.history.writer`).

A tick reads membership (groups, connections, owners) every ``interval``; committed offsets and
the brokers' max offsets every ``offsets_interval``; and writes a checkpoint (the whole state)
every ``checkpoint_every`` and on its first tick. A tick that could not read everything (a broker
down, a request failed) records ``gaps`` and keeps the previous membership and ownership rather
than report everyone behind that broker as gone; so does a broker that has just disappeared from
the name server's cluster list (a name server drops a stopped broker at once), for 10 minutes.
Ticks run on a fixed schedule: a tick that takes longer than the interval makes the next start at
the next slot, and the slots missed are counted (``skipped_before``). Durations are measured on the
monotonic clock; how far the wall clock moved against it since the last tick is recorded
(``clock_jump_ms``).

One :class:`~mqbalance.fleet.rocketmq.live.ClusterReader` serves every tick (its connections stay
open; a broker's topic or group table unchanged since the last tick is not parsed again, nor a
group's connection list whose bytes it had before), and the owners are computed again only for the
groups whose connections, subscriptions or subscribed topics' routes changed (a group whose answer
says what it said when its owners were computed keeps its state without being looked at again):
an unchanged tick costs requests per broker and per group, not per topic or queue, and compares
only what changed. After each checkpoint the state is frozen out of the garbage collector's reach
(:func:`gc.freeze`; :meth:`Collector.close` unfreezes it).

On a restart the state is rebuilt from the dataset (the last checkpoint and the changes after
it), so the first tick of the new run writes only what changed while the collector was away.

>>> state = FleetState()
>>> later = FleetState(members={("g", "c1", "10.0.0.1:1"): ("JAVA", 453, "AVG")})
>>> [(e["event"], e["client_id"], e["client_addr"]) for e in diff(state, later, offsets=False)["members"]]
[('join', 'c1', '10.0.0.1:1')]
"""

from __future__ import annotations

import gc
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqbalance.exceptions import RemotingError
from mqbalance.fleet.rocketmq.assignment import assign_snapshot
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
from mqbalance.fleet.rocketmq.lag_time import NO_LAG, LagClock, Oldest, offsets_from_answer, read_consume_stats
from mqbalance.fleet.rocketmq.live import ClusterReader
from mqbalance.history.metrics import WatchMetrics
from mqbalance.history.ticking import Observation, TickLoop, TickResult, replay, seconds
from mqbalance.remoting import NameServer
from mqbalance.remoting.client import RemotingClient

__all__ = ["Collector", "FleetState", "TickResult", "diff", "load_state"]  # TickResult: ticking's, re-exported

Queue = tuple[str, str, str, int]  # group, topic, broker name, queue id

#: how long a broker that left the name server's cluster list counts as unread rather than gone
BROKER_MEMORY_S = 600.0


@dataclass
class FleetState:
    """What one tick saw: groups (message model, subscriptions, strategy), connections (group,
    client id, address → language, version, strategy), queue owners (owner, processes) and
    offsets (committed, broker max)."""

    groups: dict[str, tuple[str | None, tuple[str, ...], str | None]] = field(default_factory=dict)
    members: dict[tuple[str, str, str], tuple[str | None, int | None, str | None]] = field(default_factory=dict)
    ownership: dict[Queue, tuple[str | None, int]] = field(default_factory=dict)
    offsets: dict[Queue, tuple[int | None, int | None]] = field(default_factory=dict)
    #: lag seconds (:mod:`mqbalance.fleet.rocketmq.lag_time`): per lagging queue, the store time of
    #: its oldest unconsumed message (ms; ``None``: not known) and how it is known
    oldest: dict[Queue, tuple[int | None, str]] = field(default_factory=dict)


def _queue_row(q: Queue) -> dict[str, Any]:
    return {"group": q[0], "topic": q[1], "broker_name": q[2], "queue_id": q[3]}


def diff(
    old: FleetState, new: FleetState, *, offsets: bool, queues: Iterable[Queue] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The events that turn ``old`` into ``new`` (offsets only when ``offsets``; owners only of
    ``queues`` when given: the queues of the groups that may have changed)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for g, (model, subs, strategy) in sorted(new.groups.items()):
        before = old.groups.get(g)
        if before != (model, subs, strategy):
            event = "appear" if before is None else "subscription"
            out["groups"].append(
                {"event": event, "group": g, "message_model": model, "subscriptions": list(subs), "strategy": strategy}
            )
    for g in sorted(old.groups.keys() - new.groups.keys()):
        out["groups"].append({"event": "disappear", "group": g})
    for key in sorted(new.members.keys() - old.members.keys()):
        lang, version, strategy = new.members[key]
        out["members"].append(
            {
                "event": "join",
                "group": key[0],
                "client_id": key[1],
                "client_addr": key[2],
                "language": lang,
                "version": version,
                "strategy": strategy,
            }  # fmt: skip
        )
    for key in sorted(old.members.keys() - new.members.keys()):
        out["members"].append({"event": "leave", "group": key[0], "client_id": key[1], "client_addr": key[2]})
    candidates = new.ownership.keys() | old.ownership.keys() if queues is None else set(queues)
    for q in sorted(candidates):
        if q not in new.ownership:
            if q not in old.ownership:
                continue  # no longer the group's queue: not "owned by nobody"
            out["ownership"].append({"event": "remove", **_queue_row(q), "owner": None, "processes": 0})
            continue
        now = new.ownership[q]
        if old.ownership.get(q, (None, 0)) != now:
            out["ownership"].append({"event": "change", **_queue_row(q), "owner": now[0], "processes": now[1]})
    if offsets:
        for q, (committed, top) in sorted(new.offsets.items()):
            if old.offsets.get(q) != (committed, top) or old.oldest.get(q) != new.oldest.get(q):
                out["offsets"].append(
                    {"event": "change", **_queue_row(q), "committed": committed, "max_offset": top, **_oldest(new, q)}
                )
    return dict(out)


def _oldest(state: FleetState, q: Queue) -> dict[str, Any]:
    store, how = state.oldest.get(q, (None, None))
    return {"oldest_store_ms": store, "lag_time": how}


def checkpoint(state: FleetState) -> dict[str, list[dict[str, Any]]]:
    """The whole state as ``checkpoint`` events."""
    return {
        "groups": [
            {"event": "checkpoint", "group": g, "message_model": m, "subscriptions": list(s), "strategy": st}
            for g, (m, s, st) in sorted(state.groups.items())
        ],
        "members": [
            {
                "event": "checkpoint",
                "group": k[0],
                "client_id": k[1],
                "client_addr": k[2],
                "language": v[0],
                "version": v[1],
                "strategy": v[2],
            }  # fmt: skip
            for k, v in sorted(state.members.items())
        ],
        "ownership": [
            {"event": "checkpoint", **_queue_row(q), "owner": o, "processes": n}
            for q, (o, n) in sorted(state.ownership.items())
        ],
        "offsets": [
            {"event": "checkpoint", **_queue_row(q), "committed": c, "max_offset": m, **_oldest(state, q)}
            for q, (c, m) in sorted(state.offsets.items())
        ],
    }


def load_state(root: str | Path) -> FleetState:
    """The state at the last committed tick of a history: its last checkpoint, then the changes."""
    state: FleetState = replay(root, FleetState(), _apply)
    return state


def _apply(state: FleetState, name: str, r: Mapping[str, Any]) -> None:
    if name == "groups":
        if r["event"] == "disappear":
            state.groups.pop(r["group"], None)
        else:
            state.groups[r["group"]] = (r["message_model"], tuple(r["subscriptions"] or ()), r["strategy"])
    elif name == "members":
        key = (r["group"], r["client_id"], r["client_addr"])
        if r["event"] == "leave":
            state.members.pop(key, None)
        else:
            state.members[key] = (r["language"], r["version"], r["strategy"])
    else:
        q = (r["group"], r["topic"], r["broker_name"], r["queue_id"])
        if name == "ownership":
            if r["event"] == "remove" or (r["owner"] is None and r["processes"] == 0 and r["event"] == "change"):
                state.ownership.pop(q, None)
            else:
                state.ownership[q] = (r["owner"], r["processes"])
        else:
            state.offsets[q] = (r["committed"], r["max_offset"])
            if r.get("lag_time") is not None:
                state.oldest[q] = (r.get("oldest_store_ms"), r["lag_time"])
            else:
                state.oldest.pop(q, None)


def _source(spec: Mapping[str, Any], routes: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a group's owners are computed from: its spec (connections in a fixed order: a Java
    broker lists them in a different order at each request) and its topics' routes."""
    conns = sorted(spec.get("connections", ()), key=lambda c: (str(c.get("clientId")), str(c.get("clientAddr"))))
    rest = {k: v for k, v in spec.items() if k != "connections"}
    return rest, conns, [routes.get(t) for t in spec.get("subscriptions", ())]


def _settle_heap() -> None:
    """After a checkpoint: collect the cyclic garbage, then freeze what is left (:func:`gc.freeze`:
    the fleet's state and the reader's caches, ~500,000 objects at 10^6 queues) so that the
    garbage collector's full passes during the next ticks do not walk it again (measured at 10^6
    queues: one such pass took 0.6–2 s, more than the rest of an unchanged tick). What a tick
    drops is still freed by reference counting; cyclic garbage among frozen objects waits for the
    next checkpoint (or :meth:`Collector.close`, which unfreezes)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class Collector(TickLoop):
    """Watches the cluster behind ``namesrv`` into the history at ``out`` (see the module docs;
    the tick loop is :class:`~mqbalance.history.ticking.TickLoop`'s)."""

    def __init__(
        self,
        namesrv: str,
        out: str | Path,
        *,
        interval: float = 10.0,
        offsets_interval: float = 60.0,
        checkpoint_every: float = 3600.0,
        retain: float | None = 7 * 86400.0,
        timeout: float = 3.0,
        running_info: bool = False,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        say: Callable[[str], None] = lambda _m: None,
        metrics: WatchMetrics | None = None,
        lag_time_budget: int = 256,
    ) -> None:
        self.namesrv = namesrv
        self.timeout = seconds(timeout, "timeout")
        NameServer(namesrv, timeout=self.timeout).close()  # the addresses are checked now, not at the first tick
        super().__init__(
            out,
            kind="rocketmq",
            interval=interval,
            offsets_interval=offsets_interval,
            checkpoint_every=checkpoint_every,
            retain=retain,
            wall=wall,
            monotonic=monotonic,
            say=say,
            metrics=metrics,
        )
        self.running_info = running_info
        self.state: FleetState = load_state(self.writer.root)
        #: brokers listed before (name -> address, when last listed): one that disappears from the
        #: cluster list is a gap for BROKER_MEMORY_S, not the end of every group it served
        self.brokers_seen: dict[str, tuple[str, float]] = {}
        #: lag seconds: the oldest unconsumed message per lagging queue, read bounded per offsets tick
        self.lag_clock = LagClock(budget=lag_time_budget, timeout=self.timeout)
        self.lag_clock.known = {  # a restart re-reads nothing whose committed offset did not move
            q: Oldest(-1, store, how, self.state.offsets.get(q, (None, None))[0])
            for q, (store, how) in self.state.oldest.items()
        }
        self.reader = ClusterReader(namesrv, timeout=self.timeout)
        #: per group, what its owners were computed from (its spec, its topics' routes), and its queues
        self.computed_from: dict[str, Any] = {}
        #: per group, the reader's token of the answer its owners were computed from, and its members
        self.tokens: dict[str, Any] = {}
        self.members_of: dict[str, list[tuple[tuple[str, str, str], tuple[str | None, int | None, str | None]]]] = {}
        #: the routes the owners were last computed with (the reader hands out the same object while they hold)
        self.routes_used: Any = None
        self.queues_of: dict[str, list[Queue]] = defaultdict(list)
        for q in self.state.ownership:  # a restart: the owners rebuilt from the dataset
            self.queues_of[q[0]].append(q)

    def observe(self, due_offsets: bool) -> Observation:
        """Read the cluster once: membership and owners, offsets when due."""
        start_mono = self.tick_started
        sent = RemotingClient.requests_sent
        try:
            data = self.reader.read(running_info=self.running_info, offsets=due_offsets)
        except RemotingError as e:  # no name server answered: a gap, and the next tick tries again
            data = {"errors": [{"address": self.namesrv, "request": "name server", "error": str(e)}], "failed": True}
        gaps = [
            {
                "broker_name": e.get("broker"),
                "address": e.get("address"),
                "request": str(e.get("request", "?")),
                "error": str(e.get("error", "")),
            }  # fmt: skip
            for e in data.get("errors", [])
        ]
        listed = dict(data.get("meta", {}).get("brokers", {}))
        for name, (addr, seen) in sorted(self.brokers_seen.items()):
            if name not in listed and not data.get("failed") and start_mono - seen < BROKER_MEMORY_S:
                # a name server drops a broker that stopped: its groups are unread, not gone
                gaps.append(
                    {"broker_name": name, "address": addr, "request": "cluster list", "error": "no longer listed"}
                )
        for name, addr in listed.items():
            self.brokers_seen[name] = (addr, start_mono)
        new = FleetState()
        complete = not gaps
        changed_queues: set[Queue] | None = None
        if complete:
            new, changed_queues = self._membership(data)
        else:  # what could not be read is not "gone": keep the last membership and owners
            new.groups, new.members, new.ownership = self.state.groups, self.state.members, self.state.ownership
            changed_queues = set()  # the same owners: nothing to compare
        new.offsets = self.state.offsets  # replaced, never changed in place: shared until an offsets tick
        new.oldest = self.state.oldest
        due_offsets = due_offsets and not data.get("failed")
        if due_offsets:
            offsets, failed = self._offsets(data, new)
            gaps += failed
            new.offsets = offsets
            gaps += self._lag_time(data, new)
        requests = RemotingClient.requests_sent - sent  # this process's requests during the tick
        return Observation(new, gaps, due_offsets, requests, hint=changed_queues, changed_queues=changed_queues)

    def changes(self, old: FleetState, observation: Observation) -> dict[str, list[dict[str, Any]]]:
        return diff(old, observation.state, offsets=observation.offsets_read, queues=observation.hint)

    def whole(self, state: FleetState) -> dict[str, list[dict[str, Any]]]:
        events = checkpoint(state)
        _settle_heap()
        return events

    def _membership(self, data: Mapping[str, Any]) -> tuple[FleetState, set[Queue]]:
        """The groups, members and owners a complete read shows, and the queues whose owners may
        have changed. Owners are computed again only for a group whose spec (message model,
        subscriptions, connections) or subscribed topics' routes differ from what they were last
        computed from; the others keep theirs."""
        state = FleetState()
        specs: dict[str, Any] = data.get("groups", {})
        routes: dict[str, Any] = data.get("topics", {})
        tokens = self.reader.group_tokens
        same_routes = routes is self.routes_used
        old = self.state
        sources: dict[str, Any] = {}
        members_of: dict[str, list[tuple[tuple[str, str, str], tuple[str | None, int | None, str | None]]]] = {}
        changed: set[str] = set()
        for g, spec in specs.items():
            token = tokens.get(g)
            kept = old.groups.get(g)
            if same_routes and token is not None and kept is not None and self.tokens.get(g) == token:
                # the same answer as when its owners were computed, and the same routes: all kept
                state.groups[g] = kept
                members_of[g] = mine = self.members_of[g]
                state.members.update(mine)
                sources[g] = self.computed_from[g]
                continue
            strategy = spec.get("strategy")
            state.groups[g] = (
                spec.get("messageModel"),
                tuple(sorted(spec.get("subscriptions", ()))),
                strategy if isinstance(strategy, str) else str(strategy),
            )
            mine = []
            for c in spec.get("connections", ()):
                key = (g, c["clientId"], c.get("clientAddr", ""))
                value = (c.get("language"), c.get("version"), c.get("strategy"))
                state.members[key] = value
                mine.append((key, value))
            members_of[g] = mine
            sources[g] = source = _source(spec, routes)
            if self.computed_from.get(g) != source:
                changed.add(g)
        changed |= self.computed_from.keys() - sources.keys()  # gone: their owners go too
        ownership = self.state.ownership
        touched: set[Queue] = set()
        if changed:
            ownership = dict(ownership)
            for g in changed:
                for q in self.queues_of.pop(g, ()):
                    ownership.pop(q, None)
                    touched.add(q)
            todo = {g: specs[g] for g in changed if g in specs}
            topics = {t for spec in todo.values() for t in spec.get("subscriptions", ()) if t in routes}
            snap = snapshot_from_dict({"topics": {t: routes[t] for t in sorted(topics)}, "groups": todo}, "watch")
            owners: dict[Queue, list[str]] = defaultdict(list)
            for row in assign_snapshot(snap).to_pylist():
                q = (row["group"], row["topic"], row["broker_name"], row["queue_id"])
                owners[q]  # every readable queue of a subscribed topic has an entry, owned or not
                if row["consumer"] is not None:
                    owners[q].append(row["consumer"])
            for q, who in owners.items():
                names = sorted(set(who))
                ownership[q] = (",".join(names) if names else None, len(who))
                self.queues_of[q[0]].append(q)
                touched.add(q)
        state.ownership = ownership
        self.computed_from, self.members_of, self.routes_used = sources, members_of, routes
        self.tokens = {g: tokens[g] for g in specs if g in tokens}
        return state, touched

    def _offsets(
        self, data: Mapping[str, Any], state: FleetState
    ) -> tuple[dict[Queue, tuple[int | None, int | None]], list[dict[str, Any]]]:
        """Committed and max offsets with one ``GET_CONSUME_STATS`` per group and broker (not one
        request per queue), for every queue a group owns or has committed offsets on; the requests
        that failed as gaps. A queue's committed offset comes from the same answer as its max offset
        (one moment for both: a lag read seconds apart counts the messages sent in between); only
        for a queue the tick's read of the brokers' offset tables has one (a broker may answer 0
        for a queue without any), and that read's offset where the answer has none."""
        committed = {
            (o["group"], o["topic"], o["brokerName"], int(o["queueId"])): int(o["offset"])
            for o in data.get("offsets", [])
        }
        addresses = dict(data.get("meta", {}).get("brokers", {}))
        # every queue a group owns now or has committed offsets on (a stopped group keeps its
        # offsets on the broker, and its lag keeps growing: that is what STOP is about)
        keys = set(state.ownership) | set(committed)
        # one pipelined read a broker: the tick has one time stamp
        asks = {(q[0], q[2]) for q in keys}
        answers, failed = read_consume_stats(asks, addresses, timeout=self.timeout, chunk=None)
        tops = {q: top for stats, _at in answers.values() for q, (top, _c) in stats.items()}
        out = {}
        for q in keys:
            key, c, got = (q[1], q[2], q[3]), committed.get(q), answers.get((q[0], q[2]))
            now = None if got is None else got[0].get(key)
            if now is None:  # not in its group's answer: the broker's max offset from another group's
                out[q] = (c, tops.get(key))
            else:  # both offsets from the group's own answer: one moment
                out[q] = offsets_from_answer(c, now)
        return out, failed

    def _lag_time(self, data: Mapping[str, Any], state: FleetState) -> list[dict[str, Any]]:
        """Lag seconds (:class:`~mqbalance.fleet.rocketmq.lag_time.LagClock`): the oldest unconsumed
        message of the lagging queues of ``state.offsets``, into ``state.oldest``; failed reads as gaps."""
        addresses = dict(data.get("meta", {}).get("brokers", {}))
        found, failed = self.lag_clock.update(state.offsets, addresses)
        state.oldest = {q: (o.store_ms, o.state) for q, o in found.items() if o.state != NO_LAG}
        return failed

    def close_reader(self) -> None:
        self.reader.close()
        gc.unfreeze()  # what the checkpoints froze is collected as usual again
