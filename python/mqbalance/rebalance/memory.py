"""An in-memory broker for client state machines: a :class:`ConsumerManager` for membership, an
:class:`OffsetStore` for offsets, and max offsets per queue — what a simulation or a test wires a
:class:`RebalanceImpl` to.

>>> from mqbalance import MessageQueue, strategy
>>> young, old = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
>>> b = InMemoryBroker(max_offsets={young: 7, old: 9}, min_offsets={old: 3})
>>> c = RebalanceImpl("c1", "cg", b, strategy("AVG"), {"T": [young, old]}.get, topics=["T"])
>>> b.join(c, now_ms=0)
>>> c.do_rebalance(now_ms=0), [(r.mq.queue_id, r.next_offset) for r in c.pull_requests]
(True, [(0, 0), (1, 9)])
"""

from __future__ import annotations

from mqbalance.allocation.models import MessageQueue
from mqbalance.rebalance.broker import ClientChannelInfo, ConsumerManager, SubscriptionData
from mqbalance.rebalance.client import OffsetStore, RebalanceImpl

__all__ = ["InMemoryBroker"]


class InMemoryBroker:
    """Implements :class:`mqbalance.rebalance.client.Broker` over in-memory tables. Two clients
    with one id are two channels.

    ``query_offset`` answers like the broker's ``ConsumerManageProcessor``: a stored offset, else
    0 for a queue whose first message is still held (here: every queue whose ``min_offsets`` entry
    is 0, the default), else -1 — so a group's first start, or a queue added later, is consumed
    from its beginning rather than skipped."""

    def __init__(
        self,
        manager: ConsumerManager | None = None,
        offsets: OffsetStore | None = None,
        max_offsets: dict[MessageQueue, int] | None = None,
        min_offsets: dict[MessageQueue, int] | None = None,
    ) -> None:
        self.manager = manager or ConsumerManager()
        self.offsets = offsets or OffsetStore()
        self.max_offsets = max_offsets if max_offsets is not None else {}
        self.min_offsets = min_offsets if min_offsets is not None else {}
        self.now_ms = 0

    @staticmethod
    def channel(client: RebalanceImpl) -> str:
        """The client's ``channel`` if it has one, else a name unique to the client object."""
        return client.channel or f"{client.client_id}#{id(client):x}"

    def join(self, client: RebalanceImpl, *, now_ms: int) -> None:
        """The client's start-up heartbeat."""
        self.now_ms = now_ms
        self.send_heartbeat(client)

    def leave(self, client: RebalanceImpl) -> None:
        """A graceful shutdown: persist every owned offset, then unregister."""
        for mq, pq in client.process_queues.items():
            self.offsets.commit(client.group, mq, pq.consumed_offset)
        self.unregister(client)

    def unregister(self, client: RebalanceImpl) -> None:
        self.manager.unregister_consumer(client.group, self.channel(client))

    def send_heartbeat(self, client: RebalanceImpl) -> None:
        subs = [SubscriptionData(t, "*", client.sub_version) for t in client.topics]
        self.manager.register_consumer(
            client.group,
            ClientChannelInfo(self.channel(client), client.client_id),
            subs,
            now_ms=self.now_ms,
            message_model=client.message_model,
        )

    def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None:
        return self.manager.find_client_ids(group)

    def query_offset(self, group: str, mq: MessageQueue) -> int:
        offset = self.offsets.query(group, mq)
        if offset < 0 and self.min_offsets.get(mq, 0) == 0:
            return 0
        return offset

    def max_offset(self, mq: MessageQueue) -> int:
        return self.max_offsets.get(mq, 0)

    def commit_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        self.offsets.commit(group, mq, offset)
