"""Scenario 6 of the network-fault tests: a three-server ZooKeeper ensemble (each server in its own
network namespace, from the Debian package), and the server a member is connected to partitioned
away from the other two.

Two variants alternate, with the member's server the leader or a follower: **cut from its peers**
— the server loses the quorum but the member still reaches it, so the server closes its clients'
connections and they must find a server of the majority; **isolated** — the server is cut off
from everyone, the member's connection goes silent (no reset) and the member must notice by
itself (kazoo's read timeout, ⅔ of the session) and move.

What must hold: the member reaches a majority server within its session timeout in the first
variant (measured in both); if it got there in time it kept its session and its queues (no
revocation, no rebalance), and if not it revoked them on the lost session and rejoined; nothing
was ever worked by two members at once, nothing lost, commits never backwards (the record check).
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from nemesis_net import Network
from nemesis_zk import Table, ZkGroup, conclude, paused_queue_seconds, rounds, seed_for
from zk_fixture import ZooKeeperEnsemble

pytestmark = pytest.mark.nemesis
pytest_plugins = ["nemesis_plugin"]  # `network`, `zk_ensemble`

SESSION_S = 4.0
MEMBERS = 3
QUEUES = 12
#: Seconds for the cut-off server's clients to be on a majority server, in the "cut from its peers"
#: variant: the server gives up on its leader after syncLimit (1 s) and drops its clients; they
#: reconnect at once (a follower was cut) or once the majority elected a new leader (~1.5 s).
MOVE_BOUND_S = SESSION_S
#: (variant, role of the member's server): each test runs two of them, the long form all in turn.
KINDS = [("cut", "leader"), ("isolate", "follower"), ("cut", "follower"), ("isolate", "leader")]


def _server_of(ens: ZooKeeperEnsemble, addr: str) -> int | None:
    for i in range(len(ens.nodes)):
        if addr in ens.clients_of(i):
            return i
    return None


def _round(
    network: Network, ens: ZooKeeperEnsemble, g: ZkGroup, rng: random.Random, variant: str, role: str
) -> dict[str, Any]:
    members = sorted(g.procs)
    assert g.wait(lambda: g.converged(members), 30) is not None, f"not converged: {g.owners()}"
    time.sleep(rng.uniform(0.2, 1.0))
    servers: dict[str, int] = {}
    for m in members:  # who is connected where
        found = g.wait(lambda m=m: _server_of(ens, g.nodes[m].addr) is not None, 10)
        assert found is not None, f"{m} ({g.nodes[m].addr}) is connected to no server"
        server_of_m = _server_of(ens, g.nodes[m].addr)
        assert server_of_m is not None
        servers[m] = server_of_m
    on_role = [m for m in members if ens.mode(servers[m]) == role]
    victim = rng.choice(on_role or members)
    addr = g.nodes[victim].addr
    zs = servers[victim]
    others = [i for i in range(3) if i != zs]
    was_leader = ens.mode(zs) == "leader"
    g.admin_on(ens.host(others[0]))  # measure through a server of the majority
    sessions = {m: g.session_of(m) for m in members}
    owners_before = g.owners()
    t_fault = time.monotonic()
    if variant == "cut":
        for o in others:
            network.cut(ens.nodes[zs], ens.nodes[o])
    else:
        network.partition(ens.nodes[zs])
    moved = g.wait(lambda: any(addr in ens.clients_of(o) for o in others), SESSION_S + 6)
    time.sleep(rng.uniform(1.0, 2.0))
    owned_again = g.wait(lambda: g.converged(members), 15)
    t_heal = time.monotonic()
    network.heal()
    serving = g.wait(ens.serving, 30)
    settled = g.wait(lambda: g.converged(members), 20)
    return {
        "variant": variant,
        "victim": victim,
        "server": zs,
        "was_leader": was_leader,
        "moved": moved,
        "kept": g.session_of(victim) == sessions[victim],
        "sessions_before": sessions,
        "sessions_after": {m: g.session_of(m) for m in members},
        "owners_before": owners_before,
        "owned_again": owned_again,
        "serving": serving,
        "settled": settled,
        "t_fault": t_fault,
        "t_heal": t_heal,
        "t_end": time.monotonic(),
    }


def _check(records: dict[str, list[dict[str, Any]]], rnd: dict[str, Any]) -> list[str]:
    bad = []
    v = rnd["victim"]
    where = f"{rnd['variant']} server {rnd['server']}{' (leader)' if rnd['was_leader'] else ''}"
    if rnd["moved"] is None:
        bad.append(f"{v}: never reached a majority server ({where})")
    elif rnd["variant"] == "cut" and rnd["moved"] > MOVE_BOUND_S:
        bad.append(f"{v}: reached a majority server after {rnd['moved']:.2f} s > {MOVE_BOUND_S} s ({where})")
    if rnd["owned_again"] is None or rnd["settled"] is None or rnd["serving"] is None:
        bad.append(f"group or ensemble did not settle ({where}): {rnd}")
    for m, rows in records.items():
        window = [r for r in rows if rnd["t_fault"] <= r.get("t", 0) <= rnd["t_end"]]
        lost = [r for r in window if r.get("e") == "r" and r.get("why") == "session-lost"]
        kept = rnd["sessions_after"].get(m) == rnd["sessions_before"].get(m)
        if kept and lost:
            bad.append(f"{m} kept its session but revoked on a lost session ({where})")
        if not kept and not lost and any(q == m for q in rnd["owners_before"].values()):
            bad.append(f"{m} got a new session but never revoked what it held ({where})")
    if all(rnd["sessions_after"][m] == rnd["sessions_before"][m] for m in rnd["sessions_before"]):
        # nobody lost a session: nobody rebalanced, no queue changed hands
        moved_queues = [r for rows in records.values() for r in rows if r.get("e") in ("a", "r")]
        moved_queues = [r for r in moved_queues if rnd["t_fault"] <= r["t"] <= rnd["t_end"]]
        if moved_queues:
            bad.append(f"every session kept, yet queues changed hands ({where}): {moved_queues[:3]}")
    return bad


@pytest.mark.parametrize(("mode", "strategy"), [("every-member", "AVG"), ("leader", "sticky")])
def test_server_partitioned_from_ensemble(
    network: Network, zk_ensemble: ZooKeeperEnsemble, tmp_path: Path, mode: str, strategy: str
) -> None:
    """Scenario 6: the member's server is partitioned from the other two; the member moves to the
    majority and keeps its queues if it gets there within its session."""
    name = f"6: three-server ensemble, the member's server partitioned ({mode})"
    seed = seed_for(name)
    rng = random.Random(seed)
    ens = zk_ensemble
    g = ZkGroup(ens.hosts, f"ens-{mode}", mode, strategy, tmp_path, queues=QUEUES, session_s=SESSION_S)
    table = Table(name)
    done: list[dict[str, Any]] = []
    try:
        for i in range(MEMBERS):
            g.spawn(f"m{i}", network.node(f"m{i}"), ens.hosts)
        k = 0 if mode == "every-member" else 2  # the two tests cover the four kinds between them
        for r in range(rounds(2)):
            variant, role = KINDS[(k + r) % len(KINDS)]
            done.append(_round(network, ens, g, rng, variant, role))
        time.sleep(0.5)
        g.stop_all()
        check, records = g.check()
        violations = [] if check.ok else [json.dumps(check.summary())]
        for rnd in done:
            violations += _check(records, rnd)
            table.owned_again_s.append(rnd["owned_again"] if rnd["owned_again"] is not None else float("inf"))
            table.paused_queue_s.append(paused_queue_seconds(records, rnd["t_fault"], rnd["t_end"]))
            table.extra[f"move_s[{rnd['variant']}]"].append(rnd["moved"] if rnd["moved"] is not None else float("inf"))
        table.extra["sessions_kept"] = [float(sum(r["kept"] for r in done))]
        print([{k: rnd[k] for k in ("variant", "victim", "server", "was_leader", "moved", "kept")} for rnd in done])
        conclude(table, len(done), violations, check, seed, QUEUES)
    except BaseException:
        print(f"seed {seed} (MQBALANCE_NEMESIS_SEED={seed} to replay)")
        print(g.logs())
        print(ens.logs()[-6000:])
        raise
    finally:
        g.close()
