"""The broker's listing of connections that share a client id, in the broker state machine and the
simulator: Java's one entry per connection (the id twice: a share goes to nobody) and the Rust
port's one entry per id (the id once: both holders take the same share)."""

from __future__ import annotations

import pytest

from mqbalance import MessageQueue, sort_client_ids, sort_queues, strategy
from mqbalance.cli import main
from mqbalance.exceptions import InvalidInputError
from mqbalance.rebalance import ClientChannelInfo, ClientIdListing, ConsumerManager, SubscriptionData
from mqbalance.sim import ScenarioError, load_scenario, scenario_from_dict, simulate


def heartbeat(cm, channel, client_id, now=0):
    return cm.register_consumer(
        "cg", ClientChannelInfo(channel, client_id), [SubscriptionData("T", "*", 1)], now_ms=now
    )


def test_java_lists_a_shared_id_once_per_connection():
    cm = ConsumerManager()
    assert cm.client_ids is ClientIdListing.PER_CONNECTION
    heartbeat(cm, "ch-1", "a@1")
    heartbeat(cm, "ch-2", "b@1")
    assert heartbeat(cm, "ch-3", "a@1")
    assert sorted(cm.find_client_ids("cg")) == ["a@1", "a@1", "b@1"]


def test_per_client_id_keeps_one_connection_per_id_and_the_latest_takes_it_over():
    sent = []
    cm = ConsumerManager(client_ids="per-client-id", notify=lambda ch, g: sent.append(ch))
    heartbeat(cm, "ch-1", "a@1")
    heartbeat(cm, "ch-2", "b@1")
    sent.clear()
    assert heartbeat(cm, "ch-3", "a@1", now=5)  # a new connection: CHANGE, the group is notified
    assert sorted(cm.find_client_ids("cg")) == ["a@1", "b@1"]
    assert set(cm.groups["cg"].channels) == {"ch-2", "ch-3"}
    assert sorted(sent) == ["ch-1", "ch-2", "ch-3"]  # the one losing the id is notified, then closed
    assert cm.do_channel_close_event("ch-1") == []  # no longer listed: its close changes nothing
    sent.clear()
    assert heartbeat(cm, "ch-1", "a@1", now=30_000)  # its next heartbeat takes the id back
    assert set(cm.groups["cg"].channels) == {"ch-2", "ch-1"} and sorted(sent) == ["ch-1", "ch-2", "ch-3"]


@pytest.mark.parametrize(("notify_on_leave", "expected"), [(True, ["ch-2"]), (False, [])])
def test_a_leaving_connection_notifies_the_group_unless_the_broker_drops_it_silently(notify_on_leave, expected):
    sent = []
    cm = ConsumerManager(notify=lambda ch, g: sent.append(ch), notify_on_leave=notify_on_leave)
    heartbeat(cm, "ch-1", "a@1")
    heartbeat(cm, "ch-2", "b@1")
    sent.clear()
    assert cm.do_channel_close_event("ch-1") == ["cg"]
    assert sent == expected and cm.find_client_ids("cg") == ["b@1"]


def test_an_unknown_listing_is_refused_naming_it():
    with pytest.raises(InvalidInputError, match=r"client_ids must be 'per-connection' or 'per-client-id', got 'x'"):
        ConsumerManager(client_ids="x")
    with pytest.raises(ScenarioError, match=r"broker\.client_ids: expected one of per-connection, per-client-id"):
        scenario_from_dict(
            {"topics": {"T": {"queues_per_broker": 2}}, "group": {"consumers": 1}, "broker": {"client_ids": "x"}}
        )


def _expected_shares(s):
    queues = sort_queues(MessageQueue("TopicTest", b, i) for b in s.brokers for i in range(8))
    distinct = sort_client_ids(sorted({c.client_id for c in s.consumers}))
    avg = strategy("AVG")
    return queues, {cid: set(avg.allocate(s.group, cid, queues, distinct)) for cid in distinct}


def test_the_duplicated_id_scenario_on_a_per_client_id_broker_owns_its_share_twice_and_nothing_by_nobody():
    java = simulate("duplicated-client-id")
    s = load_scenario("duplicated-client-id")
    rust = simulate(scenario_from_dict({**_raw("duplicated-client-id"), "broker": {"client_ids": "per-client-id"}}))
    _, shares = _expected_shares(s)
    twice = {f"{q.broker_name}/{q.topic}/{q.queue_id}" for q in shares["10.0.0.2@1002"]}
    assert len(twice) == 16 // 3 + (1 if sorted(shares).index("10.0.0.2@1002") < 16 % 3 else 0)
    after = rust.events[-1]
    assert after["max_owned_twice"] == len(twice) and after["max_owned_nobody"] == 0
    assert {q["queue"] for q in rust.queues if q["owned_twice_ms"] > 0} == twice
    assert all(q["pause_ms"] < 30_000 for q in rust.queues)  # only start-up pauses, never the stranded share
    # Java strands a share, so its backlog grows; the Rust broker's group keeps up
    assert rust.summary["backlog_end"] < 0.1 * java.summary["backlog_end"]
    assert rust.summary["lost"] == java.summary["lost"] == 0
    assert rust.summary["duplicates"] > 0  # both holders consume the same queues


def _raw(name):
    import yaml

    from mqbalance.sim import bundled_scenarios

    with open(bundled_scenarios()[name], encoding="utf-8") as f:
        return yaml.safe_load(f)


def test_cli_simulate_takes_the_broker_listing(tmp_path, capsys):
    import json

    assert main(["simulate", "duplicated-client-id", "--out", str(tmp_path), "--client-ids", "per-client-id"]) == 0
    m = json.loads((tmp_path / "duplicated-client-id" / "metrics.json").read_text())
    assert m["events"][-1]["max_owned_nobody"] == 0 and m["events"][-1]["max_owned_twice"] > 0
    with pytest.raises(SystemExit):
        main(["simulate", "duplicated-client-id", "--client-ids", "per-host"])
    assert "invalid choice: 'per-host'" in capsys.readouterr().err


def test_on_a_broker_that_notifies_nobody_on_leave_the_survivors_wait_for_their_periodic_rebalance():
    d = {
        "duration": "4m",
        "topics": {"T": {"queues_per_broker": 4, "rate": 80}},
        "group": {"consumers": 3, "throughput": 500},
        "events": [{"at": "2m", "leave": "10.0.0.2@1002"}],
    }
    java = simulate(scenario_from_dict(d))
    rust = simulate(scenario_from_dict({**d, "broker": {"notify_on_leave": False}}))
    assert java.events[1]["time_to_stable_ms"] <= 1_500  # notified: the 5.x minimum interval + pull delay
    assert 1_500 < rust.events[1]["time_to_stable_ms"] <= 20_000 + 1_500  # the 20 s periodic rebalance
    assert rust.summary["pause_queue_s"] > java.summary["pause_queue_s"] and rust.summary["lost"] == 0
