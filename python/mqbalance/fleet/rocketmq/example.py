"""A seeded generator of example fleets (JSON snapshots, see :mod:`mqbalance.fleet.rocketmq.snapshot`), so the
main job runs on a fresh machine with no data of the user's.

``example_fleet(seed)`` builds brokers in two clusters, topics with 4–16 queues per broker (some
read-only or write-only queue data), and consumer groups of 1–12 clients with realistic client ids
(``ip@pid#nanotime``), mostly AVG with some AVG_BY_CIRCLE and CONSISTENT_HASH. With
``hazards=True`` it injects, in named groups:

* ``cg-payments-dup``: a duplicated client id (two processes started with one instanceName);
* ``cg-audit-idle``: more consumers than queues (idle consumers);
* ``cg-orders-mixed``: one client configured AVG_BY_CIRCLE among AVG clients (overlaps and gaps);
* ``cg-ghost``: a subscription to a topic that has no route.

``example_pair(seed)`` returns ``(previous, current)``: the same fleet before and after a few
changes (a consumer left one group, one joined another, a topic gained queues) for churn.

>>> fleet = example_fleet(7, groups=12)
>>> sorted(fleet["groups"])[:2]
['cg-audit-idle', 'cg-billing-00']
"""

from __future__ import annotations

import copy
import random
from typing import Any

from mqbalance import _validate
from mqbalance.exceptions import InvalidInputError

__all__ = ["example_fleet", "example_pair", "HAZARD_GROUPS"]

HAZARD_GROUPS = ("cg-payments-dup", "cg-audit-idle", "cg-orders-mixed", "cg-ghost")
#: The example groups' strategies and how often each is drawn (a chosen mix, not a list of names).
DEFAULT_STRATEGY_MIX: tuple[list[Any], list[float]] = (
    ["AVG", "AVG_BY_CIRCLE", {"name": "CONSISTENT_HASH", "virtualNodeCnt": 10}],
    [0.7, 0.15, 0.15],
)
DOMAINS = ("orders", "payments", "billing", "inventory", "shipping", "search", "risk", "notify", "ledger", "profile")


def _client(rng: random.Random, subnet: int) -> str:
    host = f"10.{subnet}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    return f"{host}@{rng.randint(1000, 65000)}#{rng.randint(10**17, 10**18 - 1)}"


def _connection(client_id: str, rng: random.Random, strategy: Any = None) -> dict[str, Any]:
    conn: dict[str, Any] = {
        "clientId": client_id,
        "clientAddr": f"{client_id.split('@')[0]}:{rng.randint(30000, 65000)}",
        "language": "JAVA",
        "version": rng.choice([401, 433, 453, 493]),
    }
    if strategy is not None:
        conn["strategy"] = strategy
    return conn


def example_fleet(
    seed: int = 7, *, brokers: int = 6, topics: int = 24, groups: int = 60, hazards: bool = True
) -> dict[str, Any]:
    """A JSON snapshot dict; sizes are per the arguments (defaults: 64 groups, ≈ 800 readable queues)."""
    seed = _validate.integer(seed, "seed")
    brokers = _validate.count(brokers, "brokers", bytes_each=2_000)
    if brokers < 2:
        raise InvalidInputError(f"brokers must be >= 2 (topics spread over two or more), got {brokers}", brokers)
    if _validate.count(topics, "topics", bytes_each=brokers * 2_000) < 3:
        raise InvalidInputError(f"topics must be >= 3 (groups subscribe to up to three), got {topics}", topics)
    _validate.count(groups, "groups", bytes_each=4_000)
    rng = random.Random(seed)
    broker_names = [f"broker-{chr(ord('a') + i)}" for i in range(brokers)]
    snapshot: dict[str, Any] = {"topics": {}, "groups": {}}
    topic_names = []
    for i in range(topics):
        name = f"Topic{DOMAINS[i % len(DOMAINS)].capitalize()}{i:02d}"
        topic_names.append(name)
        on = rng.sample(broker_names, rng.randint(2, brokers))
        queues = rng.choice([4, 8, 8, 16])
        datas = []
        for k, b in enumerate(sorted(on)):
            perm = 6 if k == 0 else rng.choices([6, 4, 2], weights=[0.9, 0.05, 0.05])[0]  # ≥ 1 readable
            datas.append({"brokerName": b, "readQueueNums": queues, "writeQueueNums": queues, "perm": perm})
        bdatas = [
            {
                "cluster": f"cluster-{'ab'[broker_names.index(b) % 2]}",
                "brokerName": b,
                "brokerAddrs": {"0": f"10.0.{broker_names.index(b)}.10:10911"},
            }
            for b in sorted(on)
        ]
        snapshot["topics"][name] = {"brokerDatas": bdatas, "queueDatas": datas}
    for g in range(groups):
        name = f"cg-{DOMAINS[g % len(DOMAINS)]}-{g // len(DOMAINS):02d}"
        subs = rng.sample(topic_names, rng.choice([1, 1, 1, 2, 3]))
        strategy: Any = rng.choices(*DEFAULT_STRATEGY_MIX)[0]
        readable = min(
            sum(q["readQueueNums"] for q in snapshot["topics"][t]["queueDatas"] if q["perm"] & 4) for t in subs
        )
        # No incidental hazards: at most one client per queue, and consistent hashing (uneven by
        # nature) only with many queues per client.
        n = rng.randint(1, min(12, readable if not isinstance(strategy, dict) else max(1, readable // 16)))
        clients = [_client(rng, g % 250) for _ in range(n)]
        snapshot["groups"][name] = {
            "messageModel": "BROADCASTING" if g % 17 == 16 else "CLUSTERING",
            "subscriptions": subs,
            "strategy": strategy,
            "connections": [_connection(c, rng) for c in clients],
        }
    if hazards:
        t_small = next(
            t for t in topic_names if all(q["readQueueNums"] <= 8 for q in snapshot["topics"][t]["queueDatas"])
        )
        dup = _client(rng, 251)
        snapshot["groups"]["cg-payments-dup"] = {
            "messageModel": "CLUSTERING",
            "subscriptions": [topic_names[1]],
            "strategy": "AVG",
            "connections": [_connection(c, rng) for c in (dup, dup, _client(rng, 251), _client(rng, 251))],
        }
        readable = sum(q["readQueueNums"] for q in snapshot["topics"][t_small]["queueDatas"] if q["perm"] & 4)
        snapshot["groups"]["cg-audit-idle"] = {
            "messageModel": "CLUSTERING",
            "subscriptions": [t_small],
            "strategy": "AVG",
            "connections": [_connection(_client(rng, 252), rng) for _ in range(readable + 4)],
        }
        snapshot["groups"]["cg-orders-mixed"] = {
            "messageModel": "CLUSTERING",
            "subscriptions": [topic_names[0]],
            "strategy": "AVG",
            "connections": [_connection(_client(rng, 253), rng, "AVG_BY_CIRCLE" if i == 1 else None) for i in range(4)],
        }
        snapshot["groups"]["cg-ghost"] = {
            "messageModel": "CLUSTERING",
            "subscriptions": ["TopicRetired"],
            "strategy": "AVG",
            "connections": [_connection(_client(rng, 254), rng)],
        }
    return snapshot


def example_pair(seed: int = 7, **sizes: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(previous, current)``: ``current`` is ``previous`` after a consumer left the first
    clustering group with ≥ 3 clients, a consumer joined the second one, and the first topic no
    hazard group reads gained 4 queues on each broker."""
    previous = example_fleet(seed, **sizes)
    current = copy.deepcopy(previous)
    rng = random.Random(_validate.integer(seed, "seed") + 1)
    busy = [
        g
        for g, v in current["groups"].items()
        if v["messageModel"] == "CLUSTERING" and len(v["connections"]) >= 3 and g not in HAZARD_GROUPS
    ]
    current["groups"][busy[0]]["connections"].pop()
    current["groups"][busy[1]]["connections"].append(_connection(_client(rng, 200), rng))
    used_by_hazards = {
        t for g in HAZARD_GROUPS if g in current["groups"] for t in current["groups"][g]["subscriptions"]
    }
    grown = next(v for t, v in current["topics"].items() if t not in used_by_hazards)
    for q in grown["queueDatas"]:
        q["readQueueNums"] += 4
        q["writeQueueNums"] += 4
    return previous, current


def scaled_fleet(
    groups: int,
    *,
    queues_per_topic: int = 64,
    brokers: int = 8,
    clients_per_group: int = 8,
    strategy: Any = "AVG",
    seed: int = 1,
) -> dict[str, Any]:
    """A large, regular fleet for benchmarks: one topic per group, ``queues_per_topic`` readable
    queues spread over ``brokers`` brokers, ``clients_per_group`` clients each (≈ ``groups ×
    queues_per_topic`` queue assignments)."""
    seed = _validate.integer(seed, "seed")
    for name, value in (("queues_per_topic", queues_per_topic), ("brokers", brokers)):
        if _validate.count(value, name) < 1:
            raise InvalidInputError(f"{name} must be >= 1, got {value}", value)
    _validate.count(clients_per_group, "clients_per_group", bytes_each=1_000)
    _validate.count(groups, "groups", bytes_each=(clients_per_group + brokers) * 1_000)
    rng = random.Random(seed)
    per_broker = max(1, queues_per_topic // brokers)
    topics = {}
    groups_out = {}
    for g in range(groups):
        topic = f"Topic{g:06d}"
        topics[topic] = {
            "queueDatas": [
                {"brokerName": f"broker-{b:02d}", "readQueueNums": per_broker, "writeQueueNums": per_broker, "perm": 6}
                for b in range(brokers)
            ]
        }
        groups_out[f"cg-{g:06d}"] = {
            "messageModel": "CLUSTERING",
            "subscriptions": [topic],
            "strategy": strategy,
            "connections": [
                {"clientId": f"10.{g % 250}.{rng.randint(0, 255)}.{j}@{rng.randint(1000, 65000)}"}
                for j in range(clients_per_group)
            ],
        }
    return {"topics": topics, "groups": groups_out}
