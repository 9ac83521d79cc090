"""Benchmark: one ``mqbalance watch`` tick on a generated fleet of real brokers — by default 4 Java
RocketMQ 5.3.3 brokers × 16,000 topics × 16 queues (10^6 queues) and 10,000 consumer groups —
built outside the timed region (and timed itself: how long 16,000 topics take to create).

The fleet: every topic on every broker, created with ``UPDATE_AND_CREATE_TOPIC_LIST`` in batches
(one topic-table write per batch, not per topic); the groups created with
``UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST``; group ``g`` subscribes topic ``g`` (10,000 of the
16,000 topics are consumed, 640,000 queues owned) and has two members, heartbeated from ``--clients``
client connections per broker (one heartbeat carries every group of its client); one committed
offset per group and broker.

Measured per tick (median of ``--repeats``, and the spread): wall time, requests the process sent,
bytes written to the history — when nothing changed, and when 10 % of the groups gained a member
(one more client's heartbeat). The baseline in the same run: the reader before this change (one
route request per topic, then one connection-list request per group, 8 in flight, each waiting for
its answer) on the same fleet — its time and requests; and a floor: the connection-list requests
alone, pipelined to one broker, answers not parsed.

    python benches/watch_fleet.py --out benches/watch_fleet_results                 # 10^6 queues, Java
    python benches/watch_fleet.py --impl rust --brokers 2 --topics 200 --queues 4 --groups 50 --out /tmp/w

writes ``results.json`` and ``table.md`` there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from mqbalance.exceptions import BrokerResponseError  # noqa: E402
from mqbalance.history.collector import Collector, TickResult  # noqa: E402
from mqbalance.remoting import (  # noqa: E402
    BrokerClient,
    ConsumerConnectionInfo,
    ConsumerData,
    NameServer,
    RequestCode,
    ResponseCode,
)
from mqbalance.remoting.client import RemotingClient  # noqa: E402


def topic_name(i: int) -> str:
    return f"FleetTopic{i:05d}"


def group_name(g: int) -> str:
    return f"cg-fleet-{g:05d}"


class Fleet:
    """The generated fleet on a running cluster: its topics, groups, members and offsets."""

    def __init__(
        self,
        cluster: Any,
        *,
        topics: int,
        queues: int,
        groups: int,
        clients: int,
        say: Callable[[str], None] = print,
    ) -> None:
        self.cluster, self.say = cluster, say
        self.topics = [topic_name(i) for i in range(topics)]
        self.queues, self.groups, self.clients = queues, [group_name(g) for g in range(groups)], clients
        self.admins = [BrokerClient(b.addr, timeout=120.0) for b in cluster.brokers]
        #: client id -> its connection to each broker
        self.members: dict[str, list[BrokerClient]] = {}
        self.timings: dict[str, float] = {}
        #: held while heartbeating, and by :func:`measure` during a tick (its requests are the tick's)
        self.quiet = threading.Lock()
        self._stop = threading.Event()
        self._beater: threading.Thread | None = None

    def subscription(self, g: int) -> str:
        return self.topics[g % len(self.topics)]

    def create_topics(self, batch: int = 1000) -> None:
        """Every topic on every broker, ``batch`` per request (one per topic on a broker without
        the batch request); then every group's retry topic (``%RETRY%group``, 1 queue, as a broker
        creates it at a group's first heartbeat: created one by one there, each rewriting the
        whole topic table file, 10,000 of them take hours)."""
        t = time.monotonic()
        self._create(self.topics, self.queues, batch, t)
        self.timings["create_topics_s"] = time.monotonic() - t
        r = time.monotonic()
        self._create([f"%RETRY%{g}" for g in self.groups], 1, batch, r)
        self.timings["create_retry_topics_s"] = time.monotonic() - r
        # the brokers register their tables with the name server in the background
        with NameServer(self.cluster.namesrv_addr, timeout=30.0) as ns:
            while True:
                listed = set(ns.topic_list())
                missing = [topic for topic in self.topics if topic not in listed]
                if not missing:
                    break
                self.say(f"name server lists {len(self.topics) - len(missing):,}/{len(self.topics):,} topics")
                time.sleep(2.0)
            last = self.topics[-1]
            while len(ns.topic_route(last).queues) < len(self.admins):
                time.sleep(1.0)
        self.timings["topics_listed_s"] = time.monotonic() - t

    def _create(self, names: list[str], queues: int, batch: int, t: float) -> None:
        for k, admin in enumerate(self.admins):
            for start in range(0, len(names), batch):
                chunk = names[start : start + batch]
                try:
                    admin.create_topics(chunk, read=queues, write=queues)
                except BrokerResponseError as e:
                    if e.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                        raise
                    for topic in chunk:
                        admin.create_topic(topic, read=queues, write=queues)
                done = k * len(names) + start + len(chunk)
                self.say(f"topics: {done:,}/{len(names) * len(self.admins):,} ({time.monotonic() - t:.1f} s)")

    def create_groups(self) -> None:
        t = time.monotonic()
        for admin in self.admins:
            try:
                admin.create_subscription_groups(self.groups)
            except BrokerResponseError as e:
                if e.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                    raise
                break  # the broker creates each group at its first heartbeat
        self.timings["create_groups_s"] = time.monotonic() - t

    def client_groups(self, c: int) -> list[int]:
        """The groups client ``c`` is a member of: two clients per group."""
        half = max(1, self.clients // 2)
        return [g for g in range(len(self.groups)) if g % self.clients == c or (g + half) % self.clients == c]

    def heartbeat(self, client_id: str, groups: Sequence[int]) -> None:
        """Heartbeat ``client_id`` into ``groups`` on every broker (its own connections)."""
        conns = self.members.get(client_id)
        if conns is None:
            conns = self.members[client_id] = [BrokerClient(b.addr, timeout=120.0) for b in self.cluster.brokers]
        data = [ConsumerData(group_name(g), [self.subscription(g)]) for g in groups]
        for conn in conns:
            conn.heartbeat(client_id, data)

    def join_all(self) -> None:
        t = time.monotonic()
        for c in range(self.clients):
            self.heartbeat(f"10.9.0.{c}@fleet{c}", self.client_groups(c))
            self.say(f"members: client {c + 1}/{self.clients} heartbeated")
        self.timings["heartbeats_s"] = time.monotonic() - t

    def refresh(self) -> None:
        """Heartbeat every member again (a broker drops a client silent for 2 minutes)."""
        for c in range(self.clients):
            self.heartbeat(f"10.9.0.{c}@fleet{c}", self.client_groups(c))

    def keep_alive(self, every: float = 20.0) -> None:
        """Heartbeat every member every ``every`` seconds in the background, as clients do (a
        broker closes the connection of a client silent for 2 minutes), never during a tick."""

        def beat() -> None:
            while not self._stop.wait(every):
                with self.quiet:
                    self.refresh()

        self._beater = threading.Thread(target=beat, name="fleet-heartbeats", daemon=True)
        self._beater.start()

    def leave(self, client_id: str) -> None:
        for conn in self.members.pop(client_id, []):
            conn.close()

    def commit_offsets(self) -> None:
        t = time.monotonic()
        for admin in self.admins:
            for g, group in enumerate(self.groups):
                admin.client.invoke_oneway(
                    RequestCode.UPDATE_CONSUMER_OFFSET,
                    {"consumerGroup": group, "topic": self.subscription(g), "queueId": 0, "commitOffset": 0},
                )
            admin.query_offset(self.groups[-1], self.subscription(len(self.groups) - 1), 0)  # after the one-ways
        self.timings["offsets_s"] = time.monotonic() - t

    def build(self) -> None:
        self.create_topics()
        self.create_groups()
        self.join_all()
        self.commit_offsets()

    def close(self) -> None:
        self._stop.set()
        if self._beater is not None:
            self._beater.join(60)
        for client_id in list(self.members):
            self.leave(client_id)
        for admin in self.admins:
            admin.close()


@contextmanager
def cluster_of(impl: str, brokers: int, heap_mb: int) -> Iterator[Any]:
    if impl == "java":
        import rocketmq_java_cluster as jc

        jc.BROKER_HEAP_MB = heap_mb
        with jc.RocketMQJavaCluster(brokers=brokers, start_timeout=300.0) as c:
            yield c
    else:
        from rocketmq_cluster import RocketMQCluster

        with RocketMQCluster(brokers=brokers) as c:
            yield c


def row(r: TickResult, requests: int) -> dict[str, Any]:
    return {"s": r.duration_s, "bytes": r.bytes_written, "events": r.events, "requests": requests}


def measure(fleet: Fleet, out: Path, repeats: int, say: Callable[[str], None] = print) -> dict[str, Any]:
    """The ticks of a collector on ``fleet`` into ``out``: the first (checkpoint), ``repeats``
    unchanged ones and ``repeats`` where 10 % of the groups gained a member."""
    collector = Collector(fleet.cluster.namesrv_addr, out, interval=10, offsets_interval=10**6, timeout=30.0)
    rows: dict[str, list[dict[str, Any]]] = {"unchanged": [], "10 % of groups changed": []}
    floors: dict[str, list[dict[str, Any]]] = {"lists": [], "all": []}

    def tick() -> dict[str, Any]:
        with fleet.quiet:
            sent = RemotingClient.requests_sent
            r = collector.tick()
            return row(r, RemotingClient.requests_sent - sent)

    try:
        with fleet.quiet:
            fleet.refresh()
        # the first tick is long (every offset read, the checkpoint written): longer than the 2
        # minutes a broker keeps a silent client on a loaded machine, so the members keep
        # heartbeating during it (its requests count theirs too)
        sent = RemotingClient.requests_sent
        first = row(collector.tick(), RemotingClient.requests_sent - sent)
        with fleet.quiet:
            fleet.refresh()
        say(f"first tick (checkpoint): {first['s']:.2f} s, {first['bytes']:,} bytes, {first['requests']:,} requests")
        n = len(fleet.groups)
        for k in range(repeats):
            rows["unchanged"].append(tick())
            say(f"round {k + 1}/{repeats}: unchanged tick {rows['unchanged'][-1]}")
            floors["lists"].append(floor(fleet))  # right after the tick: the same load on the machine
            floors["all"].append(floor_all(fleet))
            say(f"round {k + 1}/{repeats}: floors {floors['lists'][-1]['s']:.2f} s, {floors['all'][-1]['s']:.2f} s")
            extra = f"10.9.1.{k}@extra{k}"
            with fleet.quiet:
                fleet.heartbeat(extra, [g for g in range(n) if g % 10 == k % 10])
            rows["10 % of groups changed"].append(tick())
            say(f"round {k + 1}/{repeats}: 10 % changed {rows['10 % of groups changed'][-1]}")
            fleet.leave(extra)
            for conn in fleet.admins:  # their leave lands before the next round
                conn.client.invoke(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group_name(k % 10)})
            time.sleep(1.0)
            tick()  # the leave, not measured
        # the incremental owners equal a fresh collector's full computation
        fresh = Collector(fleet.cluster.namesrv_addr, out.parent / (out.name + "-fresh"), timeout=30.0)
        try:
            latest = collector.tick()
            check = fresh.tick()
            same = latest.state.ownership == check.state.ownership and latest.state.members == check.state.members
        finally:
            fresh.close()
    finally:
        collector.close()
    return {"first": first, "rows": rows, "same_as_fresh": same, "floors": floors}


def summary(xs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "median_s": statistics.median(x["s"] for x in xs),
        "min_s": min(x["s"] for x in xs),
        "max_s": max(x["s"] for x in xs),
        "median_bytes": statistics.median(x["bytes"] for x in xs),
        "median_events": statistics.median(x["events"] for x in xs),
        "median_requests": statistics.median(x["requests"] for x in xs),
    }


def baseline(namesrv: str, workers: int = 8) -> dict[str, Any]:
    """The reader before this change, on the same fleet, through the same public requests: the
    name server's route of each topic, each broker's groups and offsets, then each group's
    connections from the first broker that has it online — ``workers`` requests in flight, each
    waiting for its answer (what ``read_cluster`` did)."""
    sent = RemotingClient.requests_sent
    t = time.monotonic()
    with NameServer(namesrv, timeout=30.0) as ns:
        info = ns.cluster_info()
        topics = ns.topic_list()
        with ThreadPoolExecutor(workers) as pool:
            routes = list(pool.map(ns.topic_route, topics))
        addrs = [b.master_addr for _n, b in sorted(info.brokers.items()) if b.master_addr]
        brokers = [BrokerClient(a, timeout=30.0) for a in addrs]
        try:
            groups: set[str] = set()
            for b in brokers:
                groups.update(b.subscription_groups())
                b.all_consumer_offsets()

            def connections(group: str) -> ConsumerConnectionInfo | None:
                for b in brokers:
                    got = b.consumer_connections(group)
                    if got is not None:
                        return got
                return None

            with ThreadPoolExecutor(workers) as pool:
                online = [c for c in pool.map(connections, sorted(groups)) if c is not None and c.connections]
        finally:
            for b in brokers:
                b.close()
    return {
        "s": time.monotonic() - t,
        "requests": RemotingClient.requests_sent - sent,
        "routes": len(routes),
        "online": len(online),
    }


def floor(fleet: Fleet) -> dict[str, Any]:
    """The floor of a tick that asks each group's connections: the same pipelined
    ``GET_CONSUMER_CONNECTION_LIST`` of every group to the first broker, the responses received
    and matched but not parsed (what the broker and the socket cost, not our reading)."""
    with fleet.quiet, BrokerClient(fleet.cluster.brokers[0].addr, timeout=60.0) as c:
        requests = [(int(RequestCode.GET_CONSUMER_CONNECTION_LIST), {"consumerGroup": g}) for g in fleet.groups]
        c.client.invoke_many(requests[:100])  # connected, warm
        t = time.monotonic()
        got = c.client.invoke_many(requests, window=256)
        s = time.monotonic() - t
    return {"s": s, "requests": len(requests), "answered": sum(1 for r in got if not isinstance(r, Exception))}


def floor_all(fleet: Fleet) -> dict[str, Any]:
    """The floor of the whole unchanged tick: every request it sends — the name server's cluster
    info, topic list and one route per broker; each broker's topic table and group table; every
    group's connection list of the first broker — all sent at once (one connection each to the
    name server and to every broker, the connection lists pipelined), the responses received
    and matched but not parsed: what the servers and the sockets cost, not our reading."""
    brokers = fleet.cluster.brokers
    ns_requests: list[tuple[int, dict[str, Any] | None]] = [
        (int(RequestCode.GET_BROKER_CLUSTER_INFO), None),
        (int(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), None),
        *[(int(RequestCode.GET_ROUTEINFO_BY_TOPIC), {"topic": fleet.topics[k]}) for k in range(len(brokers))],
    ]
    tables = [(int(RequestCode.GET_ALL_TOPIC_CONFIG), None), (int(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), None)]
    lists = [(int(RequestCode.GET_CONSUMER_CONNECTION_LIST), {"consumerGroup": g}) for g in fleet.groups]
    with fleet.quiet:
        clients = [RemotingClient(fleet.cluster.namesrv_addr, timeout=60.0)]
        clients += [RemotingClient(b.addr, timeout=60.0) for b in brokers]
        try:
            work = [(clients[0], ns_requests)] + [
                (c, tables + (lists if k == 0 else [])) for k, c in enumerate(clients[1:])
            ]
            for c, _r in work:
                c.invoke_many(lists[:100] if c is clients[1] else [(int(RequestCode.GET_BROKER_CLUSTER_INFO), None)])
            t = time.monotonic()
            with ThreadPoolExecutor(len(work)) as pool:
                got = list(pool.map(lambda w: w[0].invoke_many(w[1], window=256), work))
            s = time.monotonic() - t
        finally:
            for c in clients:
                c.close()
    answers = [r for rs in got for r in rs]
    return {
        "s": s,
        "requests": len(answers),
        "bytes": sum(len(r.body) for r in answers if not isinstance(r, Exception)),
        "answered": sum(1 for r in answers if not isinstance(r, Exception)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--impl", choices=("java", "rust"), default="java")
    ap.add_argument("--brokers", type=int, default=4)
    ap.add_argument("--topics", type=int, default=16_000)
    ap.add_argument("--queues", type=int, default=16)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--heap-mb", type=int, default=512, help="each Java broker's heap")
    ap.add_argument("--no-baseline", action="store_true", help="skip the per-topic reader's read")
    ap.add_argument("--out", type=Path, default=Path("benches/watch_fleet_results"))
    args = ap.parse_args(argv)

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    t0 = time.monotonic()
    with cluster_of(args.impl, args.brokers, args.heap_mb) as cluster:
        started = time.monotonic() - t0
        say(f"cluster up in {started:.1f} s: {cluster!r}")
        fleet = Fleet(
            cluster, topics=args.topics, queues=args.queues, groups=args.groups, clients=args.clients, say=say
        )
        try:
            fleet.build()
            fleet.keep_alive()
            say(f"fleet built: {fleet.timings}")
            with tempfile.TemporaryDirectory() as tmp:
                got = measure(fleet, Path(tmp) / "h", args.repeats, say)
            floors, alls = got["floors"]["lists"], got["floors"]["all"]
            say(f"floor (the connection lists alone, unparsed): {floors}")
            say(f"floor (every request of the tick at once, unparsed): {alls}")
            base = None
            if not args.no_baseline:
                with fleet.quiet:
                    base = baseline(cluster.namesrv_addr)
                say(f"baseline (route per topic): {base}")
        finally:
            fleet.close()
    result: dict[str, Any] = {name: summary(xs) for name, xs in got["rows"].items()}
    result["first_tick"] = got["first"]
    result["same_owners_as_a_fresh_collector"] = got["same_as_fresh"]
    result["baseline_read"] = base
    result["floor_connection_lists_s"] = statistics.median(f["s"] for f in floors)
    result["floor_connection_lists_range_s"] = [min(f["s"] for f in floors), max(f["s"] for f in floors)]
    result["floor_all_requests_s"] = statistics.median(f["s"] for f in alls)
    result["floor_all_requests_range_s"] = [min(f["s"] for f in alls), max(f["s"] for f in alls)]
    result["floor_all_requests_bytes"] = alls[0]["bytes"]
    # each unchanged tick over the floors measured right after it (paired: the same load)
    result["paired_ratio_all"] = statistics.median(
        t["s"] / f["s"] for t, f in zip(got["rows"]["unchanged"], alls, strict=True)
    )
    result["paired_ratio_lists"] = statistics.median(
        t["s"] / f["s"] for t, f in zip(got["rows"]["unchanged"], floors, strict=True)
    )
    result["floor_all_requests"] = alls[0]["requests"]
    result["build"] = {"cluster_start_s": started, **fleet.timings}
    result["fleet"] = {
        "impl": args.impl,
        "brokers": args.brokers,
        "topics": args.topics,
        "queues_per_topic": args.queues,
        "queues": args.brokers * args.topics * args.queues,
        "groups": args.groups,
        "clients": args.clients,
    }
    command = " ".join(["python", "benches/watch_fleet.py", *(argv if argv is not None else sys.argv[1:])])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(
        json.dumps(
            {"result": result, "raw": got["rows"], "floors": {"lists": floors, "all": alls}, "command": command},
            indent=1,
        )
        + "\n"
    )
    f = result["fleet"]
    lines = [
        (
            f"{f['impl']} brokers: {f['brokers']} × {f['topics']:,} topics × {f['queues_per_topic']} queues "
            f"= {f['queues']:,} queues, {f['groups']:,} groups ({f['clients']} clients, 2 members a group); "
            f"median of {args.repeats} (min–max)"
        ),
        "",
        "| tick | time | requests | bytes written | events |",
        "|---|---|---|---|---|",
    ]
    for name in got["rows"]:
        r = result[name]
        lines.append(
            f"| {name} | {r['median_s']:.2f} s ({r['min_s']:.2f}–{r['max_s']:.2f}) | {r['median_requests']:,.0f} "
            f"| {r['median_bytes']:,.0f} | {r['median_events']:,.0f} |"
        )
    ft = got["first"]
    lines.append(f"| first (checkpoint) | {ft['s']:.2f} s | {ft['requests']:,} | {ft['bytes']:,} | {ft['events']:,} |")
    u = result["unchanged"]
    lines += [
        "",
        (
            f"floors, same run, median of {args.repeats} (min–max), each right after an unchanged tick: "
            f"every request of an unchanged tick "
            f"({result['floor_all_requests']:,}, {result['floor_all_requests_bytes'] / 2**20:.1f} MiB of answers) "
            f"sent at once, answers received but not parsed: {result['floor_all_requests_s']:.2f} s "
            f"({result['floor_all_requests_range_s'][0]:.2f}–{result['floor_all_requests_range_s'][1]:.2f}) — the "
            f"unchanged tick is {u['median_s'] / result['floor_all_requests_s']:.2f}× it; the {len(fleet.groups):,} "
            f"connection lists alone (pipelined to one broker, not parsed): {result['floor_connection_lists_s']:.2f} s "
            f"({result['floor_connection_lists_range_s'][0]:.2f}–{result['floor_connection_lists_range_s'][1]:.2f}), "
            f"the tick {u['median_s'] / result['floor_connection_lists_s']:.1f}× it; median of each tick over the "
            f"floors right after it: {result['paired_ratio_all']:.2f}× and {result['paired_ratio_lists']:.1f}×"
        ),
    ]
    if base is not None:
        lines += [
            "",
            (
                f"the reader before (a route per topic, connections per group), same fleet, once: {base['s']:.2f} s, "
                f"{base['requests']:,} requests — {base['s'] / u['median_s']:.1f}× the unchanged tick's time, "
                f"{base['requests'] / max(1, u['median_requests']):.1f}× its requests"
            ),
        ]
    b = result["build"]
    lines += [
        "",
        (
            f"build: cluster {b['cluster_start_s']:.0f} s; {f['topics']:,} topics on {f['brokers']} brokers created in "
            f"{b['create_topics_s']:.1f} s, the groups' retry topics in {b['create_retry_topics_s']:.1f} s (all listed "
            f"by the name server after {b['topics_listed_s']:.1f} s); groups "
            f"{b['create_groups_s']:.1f} s; heartbeats {b['heartbeats_s']:.1f} s; offsets {b['offsets_s']:.1f} s"
        ),
        f"owners after the rounds equal a fresh collector's: {result['same_owners_as_a_fresh_collector']}",
        "",
        f"`{command}`",
    ]
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
