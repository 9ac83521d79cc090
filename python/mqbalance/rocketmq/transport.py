"""``ClusterTransport``: the :class:`~mqbalance.rebalance.consumer.Transport` of our rebalance state
machines over a real RocketMQ cluster, through :mod:`mqbalance.remoting` — what the Java client's
``MQClientInstance`` / ``MQClientAPIImpl`` do for one consumer.

* routes come from the name server (``GET_ROUTEINFO_BY_TOPIC``): a topic's readable queues, and the
  master address of every broker set serving it;
* heartbeats (``HEART_BEAT`` with the group's subscriptions) and ``UNREGISTER_CLIENT`` go to every
  master broker of the subscribed topics, one connection per broker; each connection hands the
  broker's ``NOTIFY_CONSUMER_IDS_CHANGED`` to ``on_notify()`` and answers ``GET_CONSUMER_RUNNING_INFO``;
* the consumer list (``GET_CONSUMER_LIST_BY_GROUP``) is asked of a broker serving the topic; offsets
  (``QUERY_CONSUMER_OFFSET``, ``UPDATE_CONSUMER_OFFSET``, ``GET_MAX_OFFSET``) and pulls
  (``PULL_MESSAGE``) of the queue's own broker;
* a client id carried by more than one connection (the consumer list, ``GET_CONSUMER_CONNECTION_LIST``,
  ``GET_CONSUMER_RUNNING_INFO``) is reported as a :class:`DuplicateClientId`, which the member acts
  on (:mod:`.member`).

No request failure escapes: each is handed to ``on_error(what, error)`` and answered the way the
state machines read a failure — ``None`` for a consumer list or a route (skip this round, keep the
last route), ``-2`` for an offset query (no start offset: the queue waits for the next round),
nothing sent for a commit (the offset stays held and is sent at the next persistence).

>>> t = ClusterTransport("127.0.0.1:1", timeout=0.2)   # nothing listens there
>>> t.route("T") is None, t.errors[-1][0]
(True, 'route of T')
>>> t.close()
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mqbalance.allocation.models import MessageQueue
from mqbalance.exceptions import InvalidInputError, MQBalanceError
from mqbalance.rebalance.client import RebalanceImpl
from mqbalance.remoting import BrokerClient, ConsumerData, NameServer, RemotingClient, RemotingCommand
from mqbalance.remoting.api import PERM_READ, Message, PullStatus
from mqbalance.remoting.codes import RequestCode, ResponseCode

__all__ = ["ClusterTransport", "DuplicateClientId", "PulledMessage"]

log = logging.getLogger("mqbalance.rocketmq")

PulledMessage = Message
"""A message as a pull returns it (:class:`mqbalance.remoting.api.Message`)."""


@dataclass(frozen=True, slots=True)
class DuplicateClientId:
    """This member's client id is carried by another connection: ``listed`` is how many times the
    group's consumer list holds it (2+ on a Java broker), ``other_addresses`` the connections
    carrying it that are not this member's (what a per-id broker shows). Found by the transport
    (:meth:`ClusterTransport.find_duplicate`, :meth:`ClusterTransport.holder_before_join`), acted on
    by the member."""

    client_id: str
    group: str
    listed: int
    own_address: str | None
    other_addresses: tuple[str, ...]

    def describe(self) -> str:
        where = ", ".join(self.other_addresses) or "an unknown connection"
        return (
            f"client id {self.client_id!r} of group {self.group!r} is also used by {where} (listed {self.listed}x): "
            "two processes with one id take the same queues (and, on a Java broker, leave a share to nobody)"
        )


def _addr(text: str | None) -> str | None:
    """``"/127.0.0.1:5"`` (how some brokers print a channel) → ``"127.0.0.1:5"``."""
    return None if not text else str(text).lstrip("/")


class ClusterTransport:
    """One consumer's view of the cluster (see the module docs). ``on_notify()`` runs on a
    connection's dispatch thread: it must not block. ``running_info()`` (optional) gives the
    ``ConsumerRunningInfo`` properties to answer the broker's ``GET_CONSUMER_RUNNING_INFO`` with."""

    def __init__(
        self,
        namesrv: str,
        *,
        timeout: float = 3.0,
        on_notify: Callable[[], None] | None = None,
        on_error: Callable[[str, Exception], None] | None = None,
        on_commit: Callable[[MessageQueue, int], None] | None = None,
        running_info: Callable[[], dict[str, Any]] | None = None,
        may_commit: Callable[[MessageQueue], bool] | None = None,
    ) -> None:
        for name, callback in (
            ("on_notify", on_notify),
            ("on_error", on_error),
            ("on_commit", on_commit),
            ("running_info", running_info),
            ("may_commit", may_commit),
        ):
            if not (callback is None or callable(callback)):
                raise InvalidInputError(
                    f"{name} must be a callable or None, got {type(callback).__name__} {callback!r:.80}", callback
                )
        self.names = NameServer(namesrv, timeout=timeout)  # checks the addresses and the timeout
        self.timeout = self.names.timeout
        self._on_notify = on_notify or (lambda: None)
        self._on_error = on_error
        self._on_commit = on_commit
        self._running_info = running_info
        self._may_commit = may_commit
        self._lock = threading.Lock()
        self._brokers: dict[str, BrokerClient] = {}  # master address → its connection
        self._master: dict[str, str] = {}  # broker name → master address
        self._topic_brokers: dict[str, list[str]] = {}  # topic → broker names (route order)
        self._connects: dict[str, int] = {}  # address → connection count at our last heartbeat
        self._committed: dict[MessageQueue, int] = {}
        self.last_consumer_ids: dict[str, list[str]] = {}  # group → the list last fetched
        self.errors: list[tuple[str, str]] = []  # (what, message), the last 100
        self._closed = False

    def _error(self, what: str, error: Exception) -> None:
        self.errors.append((what, str(error)))
        del self.errors[:-100]
        if self._on_error is not None:
            self._on_error(what, error)
        else:
            log.warning("%s failed: %s", what, error)

    # ---- connections ----------------------------------------------------------------------------
    def _broker(self, addr: str) -> BrokerClient:
        with self._lock:
            closed, bc = self._closed, self._brokers.get(addr)
        if closed:
            raise MQBalanceError("transport closed", addr)
        if bc is not None:
            return bc
        new = BrokerClient(addr, timeout=self.timeout, on_request=self._server_request)
        with self._lock:
            keep = not self._closed and addr not in self._brokers
            if keep:
                self._brokers[addr] = new
            bc = self._brokers.get(addr)
        if not keep:
            new.close()
        if bc is None:
            raise MQBalanceError("transport closed", addr)
        return bc

    def _broker_of(self, broker_name: str) -> BrokerClient:
        addr = self._master.get(broker_name)
        if addr is None:
            raise MQBalanceError(f"no master address known for broker {broker_name!r} (no route yet)", broker_name)
        return self._broker(addr)

    def own_address(self, addr: str) -> str | None:
        """This process's end of its connection to broker ``addr`` (``ip:port``), as the broker
        lists it; ``None`` when not connected."""
        bc = self._brokers.get(addr)
        conn = getattr(bc.client, "_conn", None) if bc is not None else None  # the client has no public accessor
        try:
            host, port = conn.sock.getsockname()[:2]  # type: ignore[union-attr]
        except (AttributeError, OSError):
            return None
        return f"{host}:{port}"

    def connection_epoch(self, broker_name: str) -> int | None:
        """How many times the connection to ``broker_name``'s master was established, ``None`` while
        it is not connected: a new value means a new connection, on which the broker may no longer
        know this consumer."""
        with self._lock:
            addr = self._master.get(broker_name)
            bc = self._brokers.get(addr) if addr is not None else None
        return None if bc is None or not bc.client.connected else bc.client.connects

    def reconnected(self) -> bool:
        """Whether a broker connection was re-established since our last heartbeat to it (the broker
        forgot us with the old channel: heartbeat now)."""
        with self._lock:
            return any(
                bc.client.connects != self._connects.get(a, bc.client.connects) for a, bc in self._brokers.items()
            )

    def _server_request(self, client: RemotingClient, cmd: RemotingCommand) -> RemotingCommand | None:
        if cmd.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            self._on_notify()
            return None
        if cmd.code == RequestCode.GET_CONSUMER_RUNNING_INFO and self._running_info is not None:
            info = self._running_info()
            return cmd.response(ResponseCode.SUCCESS, body=json.dumps(info).encode("utf-8"))
        return cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f"code {cmd.code} not handled")

    # ---- the name server -----------------------------------------------------------------------
    def route(self, topic: str) -> list[MessageQueue] | None:
        """The topic's readable queues (``None``: no route now; the caller keeps its last one)."""
        try:
            r = self.names.topic_route(topic)
        except MQBalanceError as e:
            self._error(f"route of {topic}", e)
            return None
        with self._lock:
            for b in r.brokers:
                if b.master_addr:
                    self._master[b.broker_name] = b.master_addr
            self._topic_brokers[topic] = [q.broker_name for q in r.queues]
        return [
            MessageQueue(topic, q.broker_name, i)
            for q in r.queues
            if q.perm & PERM_READ
            for i in range(q.read_queue_nums)
        ]

    # ---- the Broker protocol of the state machines ------------------------------------------------
    def _masters(self) -> list[str]:
        with self._lock:
            return sorted(set(self._master.values()))

    def send_heartbeat(self, client: RebalanceImpl) -> None:
        data = ConsumerData(client.group, list(client.topics), message_model=client.message_model)
        for addr in self._masters():
            try:
                bc = self._broker(addr)
                bc.heartbeat(client.client_id, [data])
                with self._lock:
                    self._connects[addr] = bc.client.connects
            except MQBalanceError as e:
                self._error(f"heartbeat to {addr}", e)

    def unregister(self, client: RebalanceImpl) -> None:
        for addr in self._masters():
            try:
                self._broker(addr).unregister_client(client.client_id, client.group)
            except MQBalanceError as e:
                self._error(f"unregister from {addr}", e)

    def _topic_broker_clients(self, topic: str) -> list[BrokerClient]:
        with self._lock:
            names = list(self._topic_brokers.get(topic, ()))
        out = []
        for name in names:
            try:
                out.append(self._broker_of(name))
            except MQBalanceError as e:
                self._error(f"connect to broker {name}", e)
        return out

    def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None:
        for bc in self._topic_broker_clients(topic):
            try:
                ids = bc.consumer_ids(group)
            except MQBalanceError as e:
                self._error(f"consumer list of {group} from {bc.addr}", e)
                continue
            self.last_consumer_ids[group] = ids
            return ids
        return None

    def query_offset(self, group: str, mq: MessageQueue) -> int:
        try:
            return self._broker_of(mq.broker_name).query_offset(group, mq.topic, mq.queue_id)
        except MQBalanceError as e:
            self._error(f"offset of {group} on {mq}", e)
            return -2

    def max_offset(self, mq: MessageQueue) -> int:
        try:
            return self._broker_of(mq.broker_name).max_offset(mq.topic, mq.queue_id)
        except MQBalanceError as e:
            self._error(f"max offset of {mq}", e)
            return -1

    def commit_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        if offset < 0 or self._committed.get(mq) == offset:
            return
        if self._may_commit is not None and not self._may_commit(mq):
            return
        try:
            self._broker_of(mq.broker_name).update_offset(group, mq.topic, mq.queue_id, offset)
        except MQBalanceError as e:
            self._error(f"commit of {group} on {mq}", e)
            return
        self._committed[mq] = offset
        if self._on_commit is not None:
            self._on_commit(mq, offset)

    # ---- messages and the duplicated id ----------------------------------------------------------
    def pull(
        self, group: str, mq: MessageQueue, offset: int, max_nums: int
    ) -> tuple[Sequence[PulledMessage], int] | None:
        """Messages of ``mq`` from ``offset`` and the next offset to pull; ``None`` when it failed."""
        try:
            r = self._broker_of(mq.broker_name).pull(group, mq.topic, mq.queue_id, offset, max_nums)
        except MQBalanceError as e:
            self._error(f"pull of {mq}", e)
            return None
        if r.status is PullStatus.FOUND:
            return r.messages, r.next_begin_offset
        return [], r.next_begin_offset

    def connections(self, group: str) -> list[tuple[str, str, str | None]]:
        """``(broker address, client id, client address)`` of every connection of ``group`` on
        every master broker we know (what ``GET_CONSUMER_CONNECTION_LIST`` lists)."""
        out: list[tuple[str, str, str | None]] = []
        for addr in self._masters():
            try:
                info = self._broker(addr).consumer_connections(group)
            except MQBalanceError as e:
                self._error(f"connections of {group} from {addr}", e)
                continue
            for c in info.connections if info is not None else ():
                out.append((addr, c.client_id, _addr(c.client_addr)))
        return out

    def find_duplicate(self, group: str, client_id: str) -> DuplicateClientId | None:
        """A :class:`DuplicateClientId` when ``client_id`` is listed more than once in the group's
        consumer list (a Java broker), or a broker lists it on a connection that is not ours (either
        broker); else ``None``."""
        ids = self.last_consumer_ids.get(group) or []
        listed = ids.count(client_id)
        others, own = [], None
        for addr, cid, caddr in self.connections(group):
            if cid != client_id:
                continue
            mine = self.own_address(addr)
            own = own or mine
            if mine is not None and caddr is not None and caddr != mine:
                others.append(caddr)
        if listed <= 1 and not others:
            return None
        return DuplicateClientId(client_id, group, listed, own, tuple(others))

    def holder_before_join(self, group: str, client_id: str) -> DuplicateClientId | None:
        """Before our first heartbeat: a live process already registered with ``client_id`` in
        ``group`` (a :class:`DuplicateClientId`), else ``None``. A listed connection is confirmed
        alive by asking it for its running info through the broker (``GET_CONSUMER_RUNNING_INFO``,
        forwarded to the connection): a stale entry (a host that died silently, not yet expired)
        does not answer and does not count."""
        for addr in self._masters():
            try:
                bc = self._broker(addr)
                info = bc.consumer_connections(group)
            except MQBalanceError as e:
                self._error(f"connections of {group} from {addr}", e)
                continue
            held = [_addr(c.client_addr) or "?" for c in (info.connections if info else ()) if c.client_id == client_id]
            if not held:
                continue
            try:
                bc.consumer_running_info(group, client_id, timeout=self.timeout)
            except MQBalanceError as e:
                log.info("%s listed on %s but did not answer (a stale entry): %s", client_id, addr, e)
                continue
            return DuplicateClientId(client_id, group, len(held), None, tuple(held))
        return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            brokers, self._brokers = list(self._brokers.values()), {}
        for bc in brokers:
            bc.close()
        self.names.close()
