"""The simulator's per-broker consumer lists (what the Java cluster has: one ``ConsumerManager`` per
broker), the client's per-broker request loops (``sendHeartbeatToAllBroker``, ``unregisterClient``:
broker after broker, ``network.round_trip`` apart), its random choice of the broker it asks for the
member list (``findBrokerAddrByTopic``) and a client's start-up (its ``RebalanceService`` counts the
1 s minimum interval from the instance's creation, not from its registration)."""

from __future__ import annotations

import pytest

from mqbalance.sim import ScenarioError, Simulation, scenario_from_dict

A, B, C, J = "10.0.0.1@1", "10.0.0.2@2", "10.0.0.3@3", "10.0.0.9@9"
JOIN_MS = 30_000


def scenario(events, *, round_trip="0ms", startup=None, seed=1):
    join = {"id": J} if startup is None else {"id": J, "startup": startup}
    timeline = [{"at": "0s", "network": {"round_trip": round_trip}}]
    timeline += [{"at": f"{JOIN_MS}ms", "join": join}] if "join" in events else []
    timeline += [{"at": "60s", "leave": B}] if "leave" in events else []
    return scenario_from_dict(
        {
            "seed": seed,
            "duration": "90s",
            "sample_interval": "100ms",
            "topics": {"T": {"queues_per_broker": 4, "rate": 40}},
            "group": {"consumers": [{"id": A, "start": 0}, {"id": B, "start": 0}, {"id": C, "start": 0}]},
            "events": timeline,
        }
    )


class AskOnly(Simulation):
    """Every member asks broker ``index`` for the list (instead of a random broker)."""

    def __init__(self, s, asked: int) -> None:
        super().__init__(s)
        self.asked = asked

    def pick_broker(self):
        return self.brokers[self.asked]


def listed(sim):
    return [sorted(m.find_client_ids("cg") or []) for m in sim.managers]


def moves_after(sim, t0_ms):
    """Moments (ms after ``t0_ms``) of the ownership changes from ``t0_ms`` on."""
    return [t - t0_ms for t, _ in sim.metrics.changes if t >= t0_ms]


def test_a_heartbeat_reaches_the_second_broker_one_round_trip_after_the_first():
    sim = Simulation(scenario({"join"}, round_trip="7ms"))
    sim.run_until(JOIN_MS)
    assert listed(sim) == [sorted([A, B, C, J]), sorted([A, B, C])]  # broker-a heard it, broker-b not yet
    sim.run_until(JOIN_MS + 7)
    assert listed(sim) == [sorted([A, B, C, J])] * 2


def test_a_graceful_leave_unregisters_broker_after_broker():
    sim = Simulation(scenario({"leave"}, round_trip="3ms"))
    sim.run_until(60_000)
    assert listed(sim) == [sorted([A, C]), sorted([A, B, C])]
    sim.run_until(60_003)
    assert listed(sim) == [sorted([A, C])] * 2


def test_without_a_round_trip_the_brokers_lists_never_differ():
    sim = Simulation(scenario({"join", "leave"}))
    for t in (JOIN_MS, 60_000, 90_000):
        sim.run_until(t)
        assert listed(sim)[0] == listed(sim)[1]


@pytest.mark.parametrize(("asked", "late_ms"), [(0, 0), (1, 1_000)])
def test_a_member_that_asks_the_broker_not_yet_told_moves_one_minimum_interval_late(asked, late_ms):
    """Notified by broker-a, it asks broker-b (still the old list): nothing changes; broker-b's
    notification comes within the 1 s minimum interval, so it moves 1 s after its first try. The
    old owners of the joiner's queues release them at once (asked broker-a) or 1 s late."""
    sim = AskOnly(scenario({"join"}, round_trip="5ms"), asked)
    sim.run_until(JOIN_MS + 5_000)
    assert first_move(sim) == late_ms


def first_move(sim):
    """When the old owners first rebalanced after the join (0: at once, on broker-a's notification)."""
    return min(moves_after(sim, JOIN_MS))


def test_the_broker_asked_is_drawn_from_the_seed():
    """Per seed one deterministic draw; over seeds both brokers are asked (Java: ``random.nextInt``)."""
    seen = set()
    for seed in range(1, 9):
        runs = [Simulation(scenario({"join"}, round_trip="5ms", seed=seed)) for _ in range(2)]
        for sim in runs:
            sim.run_until(JOIN_MS + 5_000)
        assert runs[0].metrics.changes == runs[1].metrics.changes  # the same seed: the same draws
        seen.add(first_move(runs[0]))
    assert seen == {0, 1_000}  # in some runs every member asked broker-b first, in others not


def test_a_joiner_waits_out_the_minimum_interval_from_its_creation_not_its_registration():
    sim = Simulation(scenario({"join"}, startup="400ms"))
    sim.run_until(JOIN_MS + 399)
    assert J not in listed(sim)[0]  # still starting
    sim.run_until(JOIN_MS + 400)
    assert J in listed(sim)[0]  # registered with both brokers
    sim.run_until(JOIN_MS + 5_000)
    joiner = next(c for c in sim.consumers if c.pc.client_id == J)
    assert joiner.pc.service.rebalances >= 1
    # its first rebalance 1 s after start() (not after its registration), its first pull 500 ms later
    assert max(moves_after(sim, JOIN_MS)) == 1_500
    r = Simulation(scenario({"join"})).run()
    assert r.events[1]["time_to_stable_ms"] == 1_500  # no start-up: the same, registered at once


def test_start_up_and_round_trip_are_read_from_the_scenario():
    s = scenario_from_dict(
        {
            "topics": {"T": {"queues_per_broker": 1}},
            "client": {"startup": "250ms", "commit_on_pull": True},
            "network": {"round_trip": "2ms"},
            "group": {"consumers": [{"id": A, "startup": "1s"}, B]},
            "events": [{"at": "1m", "join": {"id": J, "startup": "300ms"}}],
        }
    )
    assert (s.client.startup_ms, s.client.commit_on_pull, s.network.round_trip_ms) == (250, True, 2)
    assert [c.startup_ms for c in s.consumers] == [1_000, None]
    assert s.events[0].startup_ms == 300
    defaults = scenario_from_dict({"topics": {"T": {"queues_per_broker": 1}}, "group": {"consumers": 1}})
    assert (defaults.client.startup_ms, defaults.client.commit_on_pull, defaults.network.round_trip_ms) == (0, False, 0)


@pytest.mark.parametrize("commit_on_pull", [False, True])
def test_with_commits_on_pull_a_killed_members_queues_resume_where_it_stopped(commit_on_pull):
    """Java's pulls carry the consumed offset (``commitOffsetEnable``), all but the batch just
    pulled: the new owner consumes again that last message of each queue; without them it resumes
    at the last 5 s persistence and consumes again what the dead one had consumed since."""
    s = scenario_from_dict(
        {
            "duration": "90s",
            "topics": {"T": {"queues_per_broker": 4, "rate": 40}},
            "client": {"commit_on_pull": commit_on_pull},
            "group": {"consumers": [{"id": A, "start": 0}, {"id": B, "start": 0}]},
            "events": [{"at": "62s", "crash": B, "close_connection": True}],
        }
    )
    r = Simulation(s).run()
    duplicates = r.events[1]["duplicates"]
    assert r.summary["lost"] == 0
    if commit_on_pull:  # the last batch (one message: B keeps up) of each of B's 4 queues
        assert duplicates == 4
    else:  # the 2 s since the persistence at 60 s, on B's 4 queues at 5 msg/s each
        assert duplicates == 40


@pytest.mark.parametrize(
    ("over", "path"),
    [
        ({"network": {"round_trip": "soon"}}, "network.round_trip"),
        ({"client": {"startup": -1}}, "client.startup"),
        ({"client": {"commit_on_pull": "yes"}}, "client.commit_on_pull"),
        ({"events": [{"at": "1s", "join": {"id": J, "startup": "x"}}]}, "events[0].join.startup"),
    ],
)
def test_bad_start_up_round_trip_and_commit_settings_are_refused_naming_the_field(over, path):
    d = {"topics": {"T": {"queues_per_broker": 1}}, "group": {"consumers": 1}, **over}
    with pytest.raises(ScenarioError, match=path.replace("[", r"\[").replace("]", r"\]")):
        scenario_from_dict(d)


def test_a_killed_members_closed_connection_is_seen_broker_after_broker():
    s = scenario_from_dict(
        {
            "duration": "90s",
            "topics": {"T": {"queues_per_broker": 4, "rate": 40}},
            "network": {"round_trip": "4ms"},
            "group": {"consumers": [{"id": A, "start": 0}, {"id": B, "start": 0}]},
            "events": [{"at": "62s", "crash": B, "close_connection": True}],
        }
    )
    sim = Simulation(s)
    sim.run_until(62_000)
    assert listed(sim) == [[A], sorted([A, B])]
    sim.run_until(62_004)
    assert listed(sim) == [[A], [A]]
