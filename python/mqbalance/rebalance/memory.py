"""An in-memory broker for client state machines: a :class:`ConsumerManager` for membership, an
:class:`OffsetStore` for offsets, and max offsets per queue — what a simulation or a test wires a
:class:`RebalanceImpl` to.

>>> from mqbalance import MessageQueue, strategy
>>> b = InMemoryBroker(max_offsets={MessageQueue("T", "b", 0): 7})
>>> c = RebalanceImpl("c1", "cg", b, strategy("AVG"), {"T": [MessageQueue("T", "b", 0)]}.get, topics=["T"])
>>> b.join(c, now_ms=0)
>>> c.do_rebalance(now_ms=0), c.pull_requests[0].next_offset
(True, 7)
"""

from __future__ import annotations

from ..models import MessageQueue
from .broker import ClientChannelInfo, ConsumerManager, SubscriptionData
from .client import OffsetStore, RebalanceImpl

__all__ = ["InMemoryBroker"]


class InMemoryBroker:
    """Implements :class:`mqbalance.rebalance.client.Broker` over in-memory tables. A client's
    channel is named after the client object (two clients with one id are two channels)."""

    def __init__(self, manager: ConsumerManager | None = None, offsets: OffsetStore | None = None, max_offsets: dict[MessageQueue, int] | None = None) -> None:
        self.manager = manager or ConsumerManager()
        self.offsets = offsets or OffsetStore()
        self.max_offsets = max_offsets if max_offsets is not None else {}
        self.now_ms = 0

    @staticmethod
    def channel(client: RebalanceImpl) -> str:
        return f"{client.client_id}#{id(client):x}"

    def join(self, client: RebalanceImpl, *, now_ms: int) -> None:
        """The client's start-up heartbeat."""
        self.now_ms = now_ms
        self.send_heartbeat(client)

    def leave(self, client: RebalanceImpl) -> None:
        """A graceful shutdown: persist every owned offset, then unregister."""
        for mq, pq in client.process_queues.items():
            self.offsets.commit(client.group, mq, pq.consumed_offset)
        self.manager.unregister_consumer(client.group, self.channel(client))

    def send_heartbeat(self, client: RebalanceImpl) -> None:
        subs = [SubscriptionData(t, "*", client.sub_version) for t in client.topics]
        self.manager.register_consumer(client.group, ClientChannelInfo(self.channel(client), client.client_id), subs, now_ms=self.now_ms, message_model=client.message_model)

    def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None:
        return self.manager.find_client_ids(group)

    def query_offset(self, group: str, mq: MessageQueue) -> int:
        return self.offsets.query(group, mq)

    def max_offset(self, mq: MessageQueue) -> int:
        return self.max_offsets.get(mq, 0)

    def commit_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        self.offsets.commit(group, mq, offset)
