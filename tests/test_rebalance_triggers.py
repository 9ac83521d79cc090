"""Every rebalance trigger the seeds name, on the real state machines (PushConsumer,
RebalanceService, ConsumerManager, InMemoryBroker) driven by an explicit clock (spec §3.1, §5)."""

from __future__ import annotations

import pytest

from mqbalance import InvalidInputError, MessageQueue, strategy
from mqbalance.rebalance import ConsumerManager, InMemoryBroker, PushConsumer, RebalanceService
from mqbalance.rebalance.broker import ClientChannelInfo, SubscriptionData

QUEUES = {
    "T": [MessageQueue("T", b, i) for b in ("broker-a", "broker-b") for i in range(4)],
    "U": [MessageQueue("U", "broker-a", i) for i in range(4)],
}


class Group:
    """One group on one in-memory broker; notifications are delivered at once."""

    def __init__(self, semantics: str = "4.x", **manager_kw) -> None:
        self.now = 0
        self.semantics = semantics
        self.notified: list[tuple[int, str]] = []
        self.manager = ConsumerManager(
            notify=self._notify, semantics="5.x" if semantics == "5.x" else "4.x", **manager_kw
        )
        self.broker = InMemoryBroker(self.manager)
        self.consumers: dict[str, PushConsumer] = {}
        self.rebalanced: list[tuple[int, str]] = []

    def _notify(self, channel: str, group: str) -> None:
        self.notified.append((self.now, channel))
        self.consumers[channel].on_notify(now_ms=self.now)

    def start(self, cid: str, topics=("T",)) -> PushConsumer:
        channel = f"ch-{len(self.consumers)}-{cid}"
        c = PushConsumer(
            cid, "cg", list(topics), strategy("AVG"), self.broker, QUEUES.get, semantics=self.semantics, channel=channel
        )
        original = c.rebalance

        def recording(*, now_ms: int) -> bool:
            self.rebalanced.append((now_ms, cid))
            return original(now_ms=now_ms)

        c.rebalance = recording  # type: ignore[method-assign]
        self.consumers[channel] = c
        self.broker.now_ms = self.now
        c.start(now_ms=self.now)
        return c

    def run_until(self, t: int) -> None:
        """Every consumer's due work in time order, then the clock at ``t``; the broker's 10 s
        housekeeping scan runs on its own schedule."""
        while True:
            dues = [(c.due_ms(), i) for i, c in enumerate(self.consumers.values()) if c.due_ms() is not None]
            scan = (self.now // 10_000 + 1) * 10_000
            nxt = min([d for d, _ in dues] + [scan])
            if nxt > t:
                break
            self.now = self.broker.now_ms = nxt
            if nxt == scan:
                self.manager.scan_not_active_channel(now_ms=nxt)
            for c in list(self.consumers.values()):
                c.tick(now_ms=nxt)
        self.now = self.broker.now_ms = t

    def at(self, t: int) -> list[str]:
        return [cid for when, cid in self.rebalanced if when == t]

    def owners(self) -> dict[MessageQueue, list[str]]:
        out: dict[MessageQueue, list[str]] = {}
        for c in self.consumers.values():
            if c.running:
                for mq in c.owned():
                    out.setdefault(mq, []).append(c.client_id)
        return out


def exactly_once(g: Group, topic: str = "T") -> bool:
    own = g.owners()
    return all(len(own.get(q, [])) == 1 for q in QUEUES[topic])


def test_start_rebalances_at_once_under_4x():
    g = Group("4.x")
    c = g.start("a")
    assert c.due_ms() == 0
    g.run_until(0)
    assert g.at(0) == ["a"] and len(c.owned()) == 8


def test_start_under_5x_waits_the_minimum_interval_from_the_service_creation():
    g = Group("5.x")
    g.now = 3_000
    c = g.start("a")
    g.run_until(3_999)
    assert g.rebalanced == [] and not c.owned()
    g.run_until(4_000)
    assert g.rebalanced == [(4_000, "a")] and len(c.owned()) == 8


def test_periodic_rebalance_every_20_s_without_any_notification():
    g = Group("4.x")
    g.start("a")
    g.run_until(65_000)
    assert [t for t, _ in g.rebalanced] == [0, 20_000, 40_000, 60_000]


def test_5x_adaptive_wait_retries_after_the_minimum_interval_when_not_balanced():
    s = RebalanceService(created_ms=0, min_interval_ms=1_000)
    assert s.run(now_ms=20_000, rebalance=lambda: False) is False and s.next_ms == 21_000
    assert s.run(now_ms=21_000, rebalance=lambda: True) is True and s.next_ms == 41_000
    s.wakeup(now_ms=21_500)  # woken again too soon: waits out the minimum interval, no rebalance
    assert (
        s.run(now_ms=21_500, rebalance=lambda: pytest.fail("rebalanced inside the minimum interval")) is None
        and s.next_ms == 22_000
    )


def test_join_notifies_every_member_and_they_rebalance_at_once():
    g = Group("4.x")
    g.start("10.0.0.1@1")
    g.start("10.0.0.2@1")
    g.run_until(7_000)
    g.rebalanced.clear()
    g.now = 7_000
    g.start("10.0.0.3@1")
    assert sorted(ch for t, ch in g.notified if t == 7_000) == sorted(g.consumers)  # all three channels
    g.run_until(7_000)
    assert sorted(g.at(7_000)) == ["10.0.0.1@1", "10.0.0.2@1", "10.0.0.3@1"]
    assert exactly_once(g) and sorted(len(v) for v in g.owners().values()) == [1] * 8


def test_subscription_change_notifies_the_group():
    g = Group("4.x")
    a = g.start("a", topics=("T",))
    g.start("b", topics=("T",))
    g.run_until(5_000)
    g.notified.clear()
    g.rebalanced.clear()
    a.subscribe("U")  # a new topic in the heartbeat: CHANGE
    assert sorted(ch for _, ch in g.notified) == sorted(g.consumers)
    g.run_until(5_000)
    assert sorted(g.at(5_000)) == ["a", "b"]
    assert {q.topic for q in a.owned()} == {"T", "U"}
    a.unsubscribe("U")  # the topic leaves the heartbeat: CHANGE again, and its queues are dropped
    g.run_until(5_000)
    assert {q.topic for q in a.owned()} == {"T"}


def test_an_expression_change_alone_does_not_notify_the_subversion_rule():
    g = Group("4.x")
    g.start("a")
    g.run_until(1_000)
    g.notified.clear()
    channel = next(iter(g.consumers))
    changed = g.manager.register_consumer(
        "cg", ClientChannelInfo(channel, "a"), [SubscriptionData("T", "TagA || TagB", sub_version=10**12)], now_ms=1_000
    )
    assert not changed and g.notified == []
    assert g.manager.groups["cg"].subscriptions["T"].expression == "TagA || TagB"  # replaced silently


def test_unregister_on_shutdown_notifies_and_the_survivor_takes_everything_at_once():
    g = Group("4.x")
    a = g.start("a")
    b = g.start("b")
    g.run_until(9_000)
    mine = dict.fromkeys(b.owned(), 0)
    for i, (mq, pq) in enumerate(b.owned().items()):
        pq.consumed_offset = mine[mq] = 100 + i  # consumed since the last persistence
    g.rebalanced.clear()
    b.shutdown()
    assert [ch for _, ch in g.notified][-1:] == [next(ch for ch, c in g.consumers.items() if c is a)]
    assert all(g.broker.offsets.query("cg", mq) == off for mq, off in mine.items())  # persisted on the way out
    g.run_until(9_000)
    assert g.at(9_000) == ["a"] and len(a.owned()) == 8
    assert {mq: a.impl.process_queues[mq].consumed_offset for mq in mine} == mine  # a resumes where b stopped


def test_a_silent_channel_expires_without_notification_and_the_periodic_rebalance_catches_up():
    g = Group("4.x")
    g.now = 3_000
    a = g.start("a")
    b = g.start("b")
    g.run_until(35_000)  # started (and heartbeated) at 3 s; heartbeats at 4 s and 34 s
    g.notified.clear()
    b.crash()
    g.run_until(150_000)  # the 150 s scan: silent for 116 s, still registered
    assert "b" in g.manager.find_client_ids("cg") and len(a.owned()) == 4
    g.run_until(160_000)  # the 160 s scan removes it (126 s > 120 s)...
    assert g.manager.find_client_ids("cg") == ["a"]
    assert g.notified == []  # ...and tells nobody,
    assert len(a.owned()) == 4  # so a still holds its half
    g.run_until(163_000)  # until its next periodic rebalance (every 20 s from 3 s)
    assert len(a.owned()) == 8 and [t for t, _ in g.rebalanced if t > 143_000] == [163_000]


def test_a_queue_given_up_persists_the_offset_consumed_since_the_last_persistence():
    g = Group("4.x")
    a = g.start("a")
    g.run_until(12_000)  # persisted at 10 s
    moving = [mq for mq in a.owned() if mq.broker_name == "broker-b"]
    for mq in moving:
        a.owned()[mq].consumed_offset = 77  # progress after the last persistence
        assert g.broker.offsets.query("cg", mq) in (0, -1) or g.broker.offsets.query("cg", mq) < 77
    g.start("b")
    g.run_until(12_000)
    assert all(mq not in a.owned() for mq in moving)
    assert all(g.broker.offsets.query("cg", mq) == 77 for mq in moving)


def test_periodic_persistence_every_5_s_after_a_first_10_s():
    g = Group("4.x")
    a = g.start("a")
    g.run_until(9_999)
    mq = next(iter(a.owned()))
    a.owned()[mq].consumed_offset = 5
    assert g.broker.offsets.tables == {}  # nothing stored yet
    assert g.broker.query_offset("cg", mq) == 0  # the young-queue answer
    g.run_until(10_000)
    assert g.broker.offsets.query("cg", mq) == 5
    a.owned()[mq].consumed_offset = 9
    g.run_until(14_999)
    assert g.broker.offsets.query("cg", mq) == 5
    g.run_until(15_000)
    assert g.broker.offsets.query("cg", mq) == 9


def test_lifecycle_errors_are_typed():
    g = Group("4.x")
    c = g.start("a")
    with pytest.raises(InvalidInputError, match="not created"):
        c.start(now_ms=0)
    c.crash()
    with pytest.raises(InvalidInputError, match="crashed, not running"):
        c.shutdown()
    with pytest.raises(InvalidInputError, match="semantics"):
        PushConsumer("x", "cg", ["T"], strategy("AVG"), g.broker, QUEUES.get, semantics="3.x")
    with pytest.raises(InvalidInputError, match="heartbeat_interval_ms"):
        PushConsumer("x", "cg", ["T"], strategy("AVG"), g.broker, QUEUES.get, heartbeat_interval_ms=0)
    with pytest.raises(InvalidInputError, match="wait_interval_ms"):
        RebalanceService(wait_interval_ms=0)
