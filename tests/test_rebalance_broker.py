"""Broker-side group membership (spec §5): which heartbeats, shutdowns, closes and scans notify
the group's clients — the triggers of client rebalances."""

from __future__ import annotations

import pytest

from mqbalance.exceptions import InvalidInputError
from mqbalance.rebalance import ClientChannelInfo, ConsumerManager, Event, SubscriptionData


@pytest.fixture
def world():
    sent: list[tuple[str, str]] = []
    events: list = []
    cm = ConsumerManager(notify=lambda ch, g: sent.append((ch, g)), listener=events.append)
    return cm, sent, events


def heartbeat(cm, channel, client_id, topics=("T",), version=1, now=0, **kw):
    return cm.register_consumer(
        "cg",
        ClientChannelInfo(channel, client_id),
        [SubscriptionData(t, "*", version) for t in topics],
        now_ms=now,
        **kw,
    )


def test_join_notifies_every_member_and_a_repeat_heartbeat_does_not(world):
    cm, sent, _ = world
    assert heartbeat(cm, "ch-1", "c1")
    assert heartbeat(cm, "ch-2", "c2", now=5)
    assert sent == [("ch-1", "cg"), ("ch-1", "cg"), ("ch-2", "cg")]
    sent.clear()
    assert not heartbeat(cm, "ch-1", "c1", now=30_000)
    assert sent == []
    assert cm.groups["cg"].channels["ch-1"].last_update_ms == 30_000


def test_subversion_rule(world):
    cm, sent, _ = world
    heartbeat(cm, "ch-1", "c1", topics=("T",), version=5)
    sent.clear()
    # A new expression with a greater subVersion is stored silently: no CHANGE.
    cm.register_consumer("cg", ClientChannelInfo("ch-1", "c1"), [SubscriptionData("T", "tagA", 6)], now_ms=1)
    assert sent == [] and cm.groups["cg"].subscriptions["T"].expression == "tagA"
    # An older subVersion does not replace it.
    cm.register_consumer("cg", ClientChannelInfo("ch-1", "c1"), [SubscriptionData("T", "tagB", 3)], now_ms=2)
    assert cm.groups["cg"].subscriptions["T"].expression == "tagA"
    # Adding a topic, and removing one, do fire CHANGE.
    assert heartbeat(cm, "ch-1", "c1", topics=("T", "U"), version=7, now=3)
    assert heartbeat(cm, "ch-1", "c1", topics=("U",), version=8, now=4)
    assert sent == [("ch-1", "cg"), ("ch-1", "cg")]


def test_unregister_notifies_even_for_an_unknown_channel(world):
    cm, sent, events = world
    heartbeat(cm, "ch-1", "c1")
    heartbeat(cm, "ch-2", "c2")
    sent.clear()
    cm.unregister_consumer("cg", "ch-2")
    assert sent == [("ch-1", "cg")]
    cm.unregister_consumer("cg", "ch-unknown")
    assert sent == [("ch-1", "cg"), ("ch-1", "cg")]
    cm.unregister_consumer("cg", "ch-1")
    assert "cg" not in cm.groups and any(e.event is Event.UNREGISTER for e in events)


def test_channel_close_notifies_the_rest(world):
    cm, sent, _ = world
    heartbeat(cm, "ch-1", "c1")
    heartbeat(cm, "ch-2", "c2")
    sent.clear()
    assert cm.do_channel_close_event("ch-1") == ["cg"]
    assert sent == [("ch-2", "cg")]
    assert cm.do_channel_close_event("ch-1") == []  # already gone: nobody notified


def test_expiry_after_120s_removes_silently(world):
    cm, sent, _ = world
    heartbeat(cm, "ch-1", "c1", now=0)
    heartbeat(cm, "ch-2", "c2", now=0)
    heartbeat(cm, "ch-2", "c2", now=90_000)
    sent.clear()
    assert cm.scan_not_active_channel(now_ms=120_000) == []  # not older than 120 s yet
    assert cm.scan_not_active_channel(now_ms=120_001) == ["ch-1"]
    assert sent == []  # the survivors learn it only at their next periodic rebalance
    assert cm.find_client_ids("cg") == ["c2"]


def test_duplicated_client_id_is_listed_twice(world):
    cm, _, _ = world
    heartbeat(cm, "ch-1", "10.0.0.1@same")
    heartbeat(cm, "ch-2", "10.0.0.1@same")
    assert cm.find_client_ids("cg") == ["10.0.0.1@same", "10.0.0.1@same"]
    assert cm.find_client_ids("other") is None


@pytest.mark.parametrize("semantics,notified", [("5.x", False), ("4.x", True)])
def test_broadcasting_groups_are_notified_only_in_4x(semantics, notified):
    sent = []
    cm = ConsumerManager(notify=lambda ch, g: sent.append(ch), semantics=semantics)
    cm.register_consumer(
        "cg", ClientChannelInfo("ch-1", "c1"), [SubscriptionData("T")], now_ms=0, message_model="BROADCASTING"
    )
    assert bool(sent) is notified


def test_notification_switch_and_bad_semantics():
    sent = []
    cm = ConsumerManager(notify=lambda ch, g: sent.append(ch), notify_consumer_ids_changed_enable=False)
    cm.register_consumer("cg", ClientChannelInfo("ch-1", "c1"), [SubscriptionData("T")], now_ms=0)
    assert sent == []
    with pytest.raises(InvalidInputError):
        ConsumerManager(semantics="3.x")
