"""Broker-side consumer-group membership: ``ConsumerManager`` and ``ConsumerGroupInfo``, as
RocketMQ's broker keeps them, with no I/O and no clock of their own: time arrives as
``now_ms``, and notifications go through an injected ``notify(channel, group)`` callable.

What fires a rebalance on the clients: ``CHANGE`` events, which (when
``notify_consumer_ids_changed_enable``) send ``NOTIFY_CONSUMER_IDS_CHANGED`` to every channel of the
group. A heartbeat fires ``CHANGE`` when it brings a new channel or a topic set change — not for a
pure expression change (the subVersion rule). Unregistering fires ``CHANGE`` even when the channel
was unknown; the 120 s scan of silent channels removes them **without** notifying anybody, so the
survivors only catch up at their next periodic rebalance.

>>> sent = []
>>> cm = ConsumerManager(notify=lambda channel, group: sent.append((channel, group)))
>>> subs = [SubscriptionData("TopicTest", "*", sub_version=1)]
>>> cm.register_consumer("cg", ClientChannelInfo("ch-1", "10.0.0.1@1"), subs, now_ms=0)
True
>>> cm.register_consumer("cg", ClientChannelInfo("ch-2", "10.0.0.2@1"), subs, now_ms=10)
True
>>> sorted(sent)  # the second join notified both members
[('ch-1', 'cg'), ('ch-1', 'cg'), ('ch-2', 'cg')]
>>> cm.scan_not_active_channel(now_ms=120_011)  # both silent for > 120 s: removed, nobody notified
['ch-1', 'ch-2']
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from mqbalance.exceptions import InvalidInputError
from mqbalance.versions import Semantics

__all__ = [
    "ClientIdListing",
    "ClientChannelInfo",
    "SubscriptionData",
    "Event",
    "ConsumerGroupEvent",
    "ConsumerGroupInfo",
    "ConsumerManager",
    "CHANNEL_EXPIRED_TIMEOUT_MS",
]

CHANNEL_EXPIRED_TIMEOUT_MS = 120_000


class ClientIdListing(enum.StrEnum):
    """How a broker's group table holds two connections that carry the same client id.

    ``PER_CONNECTION`` (Java's broker, the default): one entry per connection, so the id is listed
    twice; both holders compute the same share and the share after it goes to nobody.
    ``PER_CLIENT_ID`` (the Rust port, rocketmq-rust 1.0.0, measured): one connection per client
    id — a second connection that heartbeats with a registered id takes the entry over and the
    broker closes the older connection, whose process reconnects unregistered and takes the entry
    back at its next heartbeat; the id is listed once, so both holders take the same share.

    >>> ClientIdListing("per-client-id") is ClientIdListing.PER_CLIENT_ID
    True
    """

    PER_CONNECTION = "per-connection"
    PER_CLIENT_ID = "per-client-id"


@dataclass(frozen=True, slots=True)
class ClientChannelInfo:
    """One connection: the channel (any hashable id) and the client id it carries."""

    channel: str
    client_id: str
    language: str = "JAVA"
    version: int = 0
    last_update_ms: int = 0


@dataclass(frozen=True, slots=True)
class SubscriptionData:
    """A subscription as the heartbeat carries it; ``sub_version`` is the client's timestamp."""

    topic: str
    expression: str = "*"
    sub_version: int = 0


class Event(enum.StrEnum):
    """``ConsumerGroupEvent`` kinds (5.x adds the CLIENT_* ones)."""

    CHANGE = "CHANGE"
    REGISTER = "REGISTER"
    UNREGISTER = "UNREGISTER"
    CLIENT_REGISTER = "CLIENT_REGISTER"
    CLIENT_UNREGISTER = "CLIENT_UNREGISTER"


@dataclass(frozen=True, slots=True)
class ConsumerGroupEvent:
    event: Event
    group: str
    channels: tuple[str, ...] = ()


@dataclass
class ConsumerGroupInfo:
    """One group: its channels (in registration order — Java iterates a hash map) and topics."""

    group: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    channels: dict[str, ClientChannelInfo] = field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)
    client_ids: ClientIdListing = ClientIdListing.PER_CONNECTION
    replaced: list[str] = field(default_factory=list)  # channels the last heartbeat took an id from

    def all_client_ids(self) -> list[str]:
        """One entry per channel, duplicates included (the duplicated-client-id hazard); each id
        once under ``PER_CLIENT_ID``."""
        ids = [c.client_id for c in self.channels.values()]
        return list(dict.fromkeys(ids)) if self.client_ids is ClientIdListing.PER_CLIENT_ID else ids

    def update_channel(
        self, info: ClientChannelInfo, consume_type: str, message_model: str, consume_from_where: str, now_ms: int
    ) -> bool:
        """Latest heartbeat wins for the group-level fields. A new channel → True; a known channel
        whose client id changed is replaced → False; the timestamp is always refreshed.
        ``PER_CLIENT_ID``: a new channel carrying a registered id takes the id's entry over."""
        self.consume_type, self.message_model, self.consume_from_where = consume_type, message_model, consume_from_where
        self.replaced = []
        if self.client_ids is ClientIdListing.PER_CLIENT_ID and info.channel not in self.channels:
            for old in [c for c, i in self.channels.items() if i.client_id == info.client_id]:
                del self.channels[old]
                self.replaced.append(old)
        known = self.channels.get(info.channel)
        if known is None:
            self.channels[info.channel] = replace(info, last_update_ms=now_ms)
            return True
        self.channels[info.channel] = replace(
            info if known.client_id != info.client_id else known, last_update_ms=now_ms
        )
        return False

    def update_subscription(self, subscriptions: Iterable[SubscriptionData]) -> bool:
        """The subVersion rule: a new topic → changed; a known topic with a strictly greater
        ``sub_version`` is replaced silently; stored topics absent from the heartbeat are removed
        → changed."""
        incoming = list(subscriptions)
        changed = False
        for sub in incoming:
            old = self.subscriptions.get(sub.topic)
            if old is None:
                self.subscriptions[sub.topic] = sub
                changed = True
            elif sub.sub_version > old.sub_version:
                self.subscriptions[sub.topic] = sub
        topics = {s.topic for s in incoming}
        for topic in [t for t in self.subscriptions if t not in topics]:
            del self.subscriptions[topic]
            changed = True
        return changed


class ConsumerManager:
    """The broker's ``group → ConsumerGroupInfo`` table and its events.

    ``semantics`` (a :class:`~mqbalance.versions.Semantics` or its value): ``"5.x"`` (default) or
    ``"4.x"`` — 5.x fires CLIENT_* events and does not send
    CHANGE for BROADCASTING groups. ``client_ids``: how connections sharing a client id are
    listed (:class:`ClientIdListing`, Java's per-connection by default); ``notify_on_leave``: an
    unregister or a closed connection fires ``CHANGE`` (Java; the Rust port 1.0.0, measured, removes
    the connection without notifying anybody). ``notify(channel, group)`` sends
    ``NOTIFY_CONSUMER_IDS_CHANGED``; ``listener(event)`` sees every event (for simulations).
    """

    def __init__(
        self,
        *,
        notify: Callable[[str, str], None] | None = None,
        listener: Callable[[ConsumerGroupEvent], None] | None = None,
        semantics: Semantics | str = Semantics.V5,
        notify_consumer_ids_changed_enable: bool = True,
        channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS,
        client_ids: ClientIdListing | str = ClientIdListing.PER_CONNECTION,
        notify_on_leave: bool = True,
    ) -> None:
        self.semantics = Semantics.parse(semantics)
        try:
            self.client_ids = ClientIdListing(client_ids)
        except ValueError:
            raise InvalidInputError(
                f"client_ids must be 'per-connection' or 'per-client-id', got {client_ids!r}", client_ids
            ) from None
        self.groups: dict[str, ConsumerGroupInfo] = {}
        self._notify = notify or (lambda channel, group: None)
        self._listener = listener or (lambda event: None)
        self.v5 = self.semantics is Semantics.V5
        self.notify_consumer_ids_changed_enable = notify_consumer_ids_changed_enable
        self.channel_expired_timeout_ms = channel_expired_timeout_ms
        self.notify_on_leave = notify_on_leave

    def _fire(self, event: Event, group: str, channels: Iterable[str] = ()) -> None:
        ev = ConsumerGroupEvent(event, group, tuple(channels))
        self._listener(ev)
        if event is Event.CHANGE and self.notify_consumer_ids_changed_enable:
            for channel in ev.channels:
                self._notify(channel, group)

    def _change(self, group: str, info: ConsumerGroupInfo | None, also: Iterable[str] = ()) -> None:
        if self.v5 and info is not None and info.message_model == "BROADCASTING":
            return
        self._fire(Event.CHANGE, group, [*(info.channels if info else ()), *also])

    def register_consumer(
        self,
        group: str,
        info: ClientChannelInfo,
        subscriptions: Iterable[SubscriptionData],
        *,
        now_ms: int,
        consume_type: str = "CONSUME_PASSIVELY",
        message_model: str = "CLUSTERING",
        consume_from_where: str = "CONSUME_FROM_LAST_OFFSET",
        notify: bool = True,
    ) -> bool:
        """A heartbeat. Returns whether it changed the group (and so fired ``CHANGE``)."""
        g = self.groups.setdefault(group, ConsumerGroupInfo(group, client_ids=self.client_ids))
        new_channel = g.update_channel(info, consume_type, message_model, consume_from_where, now_ms)
        new_topics = g.update_subscription(subscriptions)
        changed = new_channel or new_topics
        if changed and notify:
            self._change(group, g, g.replaced)  # a connection losing its id hears it before it is closed
        self._fire(Event.REGISTER, group)
        if self.v5 and new_channel:
            self._fire(Event.CLIENT_REGISTER, group, [info.channel])
        return changed

    def unregister_consumer(self, group: str, channel: str, *, notify: bool = True) -> None:
        """A graceful shutdown: CHANGE is fired even when the channel was not known."""
        g = self.groups.get(group)
        if g is not None:
            if g.channels.pop(channel, None) is not None and self.v5:
                self._fire(Event.CLIENT_UNREGISTER, group, [channel])
            if not g.channels:
                del self.groups[group]
                self._fire(Event.UNREGISTER, group)
        if notify and self.notify_on_leave:
            self._change(group, self.groups.get(group) or g)

    def do_channel_close_event(self, channel: str) -> list[str]:
        """A closed connection: removed from every group; groups it was in get CHANGE."""
        touched = []
        for name, g in list(self.groups.items()):
            if g.channels.pop(channel, None) is None:
                continue
            touched.append(name)
            if self.v5:
                self._fire(Event.CLIENT_UNREGISTER, name, [channel])
            if not g.channels:
                del self.groups[name]
                self._fire(Event.UNREGISTER, name)
            if self.notify_on_leave:
                self._change(name, self.groups.get(name) or g)
        return touched

    def scan_not_active_channel(self, *, now_ms: int) -> list[str]:
        """The 10 s housekeeping scan: channels silent for longer than the timeout are removed
        (emptied groups too) **without CHANGE**. Returns the removed channels."""
        removed = []
        for name, g in list(self.groups.items()):
            for channel, info in list(g.channels.items()):
                if now_ms - info.last_update_ms > self.channel_expired_timeout_ms:
                    del g.channels[channel]
                    removed.append(channel)
                    if self.v5:
                        self._fire(Event.CLIENT_UNREGISTER, name, [channel])
            if not g.channels:
                del self.groups[name]
        return removed

    def find_client_ids(self, group: str) -> list[str] | None:
        """``GET_CONSUMER_LIST_BY_GROUP``: the ids the clients allocate with (unsorted; per channel)."""
        g = self.groups.get(group)
        return None if g is None else g.all_client_ids()
