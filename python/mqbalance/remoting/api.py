"""Typed requests to RocketMQ name servers and brokers over :class:`RemotingClient`: what
``mqadmin`` and the Java client send, with the answers decoded into small dataclasses.

:class:`NameServer` (one or several ``host:port`` separated by ``;``, tried in order) answers
cluster info, the topic list and topic routes; :class:`BrokerClient` does the rest (heartbeat,
consumer lists and connections, subscription groups, offsets, topics, send and pull).

>>> route = TopicRoute.from_json("T", {"brokerDatas": [{"cluster": "c", "brokerName": "b",
...     "brokerAddrs": {"0": "127.0.0.1:10911"}}], "queueDatas": [{"brokerName": "b",
...     "readQueueNums": 4, "writeQueueNums": 4, "perm": 6, "topicSysFlag": 0}]})
>>> route.queues[0].read_queue_nums, route.brokers[0].master_addr
(4, '127.0.0.1:10911')
>>> decode_properties(encode_properties({"TAGS": "a", "KEYS": "k"}))
{'TAGS': 'a', 'KEYS': 'k'}
"""

from __future__ import annotations

import enum
import json
import re
import struct
import threading
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from mqbalance.allocation.registry import from_java_class
from mqbalance.exceptions import (
    BrokerResponseError,
    InvalidInputError,
    RemotingConnectError,
    RemotingError,
    RemotingFrameError,
)
from mqbalance.remoting.client import (
    AclCredentials,
    RemotingClient,
    RequestHandler,
    check_credentials,
    check_timeout,
    parse_addr,
)
from mqbalance.remoting.codes import RequestCode, ResponseCode
from mqbalance.remoting.frame import RemotingCommand, loads_json

__all__ = [
    "BrokerClient",
    "BrokerData",
    "ClusterInfo",
    "ConsumerConnectionInfo",
    "ConsumerData",
    "ClientConnection",
    "Message",
    "NameServer",
    "PullResult",
    "PullStatus",
    "QueueData",
    "SendResult",
    "TopicConfigs",
    "TopicRoute",
    "decode_messages",
    "decode_properties",
    "encode_properties",
    "parse_consume_stats",
    "strategy_from_running_info",
    "running_info_queues",
]

PERM_READ, PERM_WRITE = 4, 2


def _json_body(addr: str, request: RequestCode, cmd: RemotingCommand) -> Any:
    if not cmd.body:
        return {}
    try:
        return loads_json(cmd.body)
    except RemotingFrameError as e:
        raise RemotingFrameError(f"{addr}: body of the {request.name} response is {e}", addr) from None


@dataclass(frozen=True, slots=True)
class BrokerData:
    """A broker set: its cluster, name and addresses by broker id (0 = master)."""

    cluster: str
    broker_name: str
    addrs: dict[int, str]
    #: the name server's JSON of it (the layout of a route's ``brokerDatas`` entries)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def master_addr(self) -> str | None:
        return self.addrs.get(0)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BrokerData:
        addrs = {int(k): str(v) for k, v in (data.get("brokerAddrs") or {}).items()}
        return cls(str(data.get("cluster") or ""), str(data["brokerName"]), addrs, dict(data))


@dataclass(frozen=True, slots=True)
class QueueData:
    """A topic's queues on one broker set (``QueueData``)."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


@dataclass(frozen=True, slots=True)
class TopicRoute:
    """``TopicRouteData``: the broker sets serving a topic and its queues on each; ``raw`` is the
    name server's JSON (the layout of a snapshot's ``topics``)."""

    topic: str
    brokers: list[BrokerData]
    queues: list[QueueData]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, topic: str, data: Mapping[str, Any]) -> TopicRoute:
        brokers = [BrokerData.from_json(b) for b in data.get("brokerDatas") or []]
        queues = [
            QueueData(
                str(q["brokerName"]),
                int(q.get("readQueueNums", 0)),
                int(q.get("writeQueueNums", 0)),
                int(q.get("perm", 0)),
                int(q.get("topicSysFlag", 0) or 0),
            )
            for q in data.get("queueDatas") or []
        ]
        return cls(topic, brokers, queues, dict(data))


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """``ClusterInfo``: every broker set by name, and the broker names of every cluster."""

    brokers: dict[str, BrokerData]
    clusters: dict[str, list[str]]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClusterInfo:
        brokers = {str(k): BrokerData.from_json(v) for k, v in (data.get("brokerAddrTable") or {}).items()}
        clusters = {str(k): sorted(map(str, v)) for k, v in (data.get("clusterAddrTable") or {}).items()}
        return cls(brokers, clusters)


@dataclass(frozen=True, slots=True)
class TopicConfigs:
    """A broker's topic table (``GET_ALL_TOPIC_CONFIG``): every topic's config by name (the
    broker's JSON: ``readQueueNums``, ``writeQueueNums``, ``perm``, ``topicSysFlag``, ``order``),
    the table's ``dataVersion``, and the names of static topics (logical queues mapped across
    brokers, whose routes only the name server knows).

    >>> t = TopicConfigs.from_json({"topicConfigTable": {"T": {"topicName": "T", "readQueueNums": 4}},
    ...     "dataVersion": {"counter": 3}})
    >>> t.topics["T"]["readQueueNums"], t.data_version, t.static
    (4, {'counter': 3}, frozenset())
    """

    topics: dict[str, dict[str, Any]]
    data_version: dict[str, Any]
    static: frozenset[str]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicConfigs:
        table = {str(k): dict(v) for k, v in (data.get("topicConfigTable") or {}).items()}
        static = set(data.get("topicQueueMappingInfoMap") or ()) | set(data.get("topicQueueMappingDetailMap") or ())
        return cls(table, dict(data.get("dataVersion") or {}), frozenset(map(str, static)))


class NameServer:
    """Name server requests. ``addrs`` is ``"host:port"`` or several joined by ``;`` (as
    ``namesrvAddr``); a name server that cannot be reached is skipped for the next one."""

    def __init__(self, addrs: str, *, timeout: float = 3.0, credentials: AclCredentials | None = None) -> None:
        if not isinstance(addrs, str):
            raise InvalidInputError(
                f"name server addresses must be a str HOST:PORT[;HOST:PORT], got {type(addrs).__name__} {addrs!r:.80}",
                addrs,
            )
        self.addrs = [a.strip() for a in addrs.split(";") if a.strip()]
        if not self.addrs:
            raise InvalidInputError(f"no name server address in {addrs!r}", addrs)
        for a in self.addrs:
            try:
                parse_addr(a)
            except InvalidInputError:
                raise InvalidInputError(
                    f"name server address {a!r} in {addrs!r} is not HOST:PORT (a port from 1 to 65535)", addrs
                ) from None
        self.timeout = check_timeout(timeout)
        self.credentials = check_credentials(credentials)
        self._client: RemotingClient | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"NameServer({';'.join(self.addrs)!r})"

    def _current(self) -> RemotingClient:
        """The client of the name server in use, connecting to the next one that accepts."""
        with self._lock:
            if self._client is not None:
                return self._client
            errors = []
            for _ in range(len(self.addrs)):
                try:
                    self._client = RemotingClient(self.addrs[0], timeout=self.timeout, credentials=self.credentials)
                    return self._client
                except RemotingConnectError as e:
                    errors.append(str(e))
                    self.addrs.append(self.addrs.pop(0))
            raise RemotingConnectError("no name server answered: " + "; ".join(errors), ";".join(self.addrs))

    def _invoke(
        self, code: RequestCode, ext: Mapping[str, Any] | None = None
    ) -> tuple[RemotingClient, RemotingCommand]:
        errors: list[str] = []
        for _ in range(len(self.addrs)):
            client = self._current()
            try:
                return client, client.invoke(code, ext)
            except (RemotingConnectError, RemotingFrameError) as e:
                errors.append(str(e))
                with self._lock:
                    if self._client is client:  # the next request goes to the next name server
                        client.close()
                        self._client = None
                        self.addrs.append(self.addrs.pop(0))
        raise RemotingConnectError("no name server answered: " + "; ".join(errors), ";".join(self.addrs))

    def _ok(self, code: RequestCode, ext: Mapping[str, Any] | None = None) -> Any:
        client, cmd = self._invoke(code, ext)
        if cmd.code != ResponseCode.SUCCESS:
            raise client.response_error(code, cmd)
        return _json_body(client.addr, code, cmd)

    def cluster_info(self) -> ClusterInfo:
        """``GET_BROKER_CLUSTER_INFO`` (106)."""
        return ClusterInfo.from_json(self._ok(RequestCode.GET_BROKER_CLUSTER_INFO))

    def cluster_info_json(self) -> dict[str, Any]:
        """``GET_BROKER_CLUSTER_INFO`` (106) as the name server's JSON."""
        return dict(self._ok(RequestCode.GET_BROKER_CLUSTER_INFO))

    def topic_list(self) -> list[str]:
        """``GET_ALL_TOPIC_LIST_FROM_NAMESERVER`` (206), sorted."""
        return sorted(map(str, self._ok(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).get("topicList") or []))

    def topic_route(self, topic: str) -> TopicRoute:
        """``GET_ROUTEINFO_BY_TOPIC`` (105); an unknown topic raises :class:`BrokerResponseError`
        with code ``TOPIC_NOT_EXIST`` (17)."""
        return TopicRoute.from_json(topic, self._ok(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> NameServer:
        return self

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class ConsumerData:
    """One group a client consumes in, as its heartbeat declares it (``ConsumerData``)."""

    group: str
    topics: Sequence[str]
    message_model: str = "CLUSTERING"
    consume_type: str = "CONSUME_PASSIVELY"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    expression: str = "*"

    def to_json(self) -> dict[str, Any]:
        subs = [
            {
                "classFilterMode": False,
                "topic": t,
                "subString": self.expression,
                "tagsSet": [] if self.expression == "*" else sorted(s.strip() for s in self.expression.split("||")),
                "codeSet": [],
                "subVersion": 0,
                "expressionType": "TAG",
            }
            for t in self.topics
        ]
        return {
            "groupName": self.group,
            "consumeType": self.consume_type,
            "messageModel": self.message_model,
            "consumeFromWhere": self.consume_from_where,
            "subscriptionDataSet": subs,
            "unitMode": False,
        }


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """One client connection of a group as a broker lists it (``Connection``)."""

    client_id: str
    client_addr: str | None
    language: str | None
    version: int | None


@dataclass(frozen=True, slots=True)
class ConsumerConnectionInfo:
    """``ConsumerConnection``: a group's connections (every one the broker lists, in its order),
    subscriptions by topic and message model."""

    connections: list[ClientConnection]
    subscriptions: dict[str, dict[str, Any]]
    message_model: str | None
    consume_type: str | None
    consume_from_where: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConsumerConnectionInfo:
        conns = [
            ClientConnection(
                str(c.get("clientId") or ""),
                c.get("clientAddr"),
                None if c.get("language") is None else str(c["language"]),
                None if c.get("version") is None else int(c["version"]),
            )
            for c in data.get("connectionSet") or []
        ]
        subs = {str(k): dict(v) for k, v in (data.get("subscriptionTable") or {}).items()}
        return cls(conns, subs, data.get("messageModel"), data.get("consumeType"), data.get("consumeFromWhere"))


@dataclass(frozen=True, slots=True)
class SendResult:
    msg_id: str
    queue_id: int
    queue_offset: int


@dataclass(frozen=True, slots=True)
class Message:
    """A stored message as a pull returns it."""

    topic: str
    queue_id: int
    queue_offset: int
    body: bytes
    properties: dict[str, str]
    born_timestamp: int
    store_timestamp: int
    reconsume_times: int
    commit_log_offset: int

    @property
    def tags(self) -> str | None:
        return self.properties.get("TAGS")

    @property
    def keys(self) -> str | None:
        return self.properties.get("KEYS")


class PullStatus(enum.StrEnum):
    """``PullStatus`` of the Java client."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_PULL_STATUS = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(frozen=True, slots=True)
class PullResult:
    status: PullStatus
    messages: list[Message]
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_broker_id: int = 0


_NAME_VALUE, _PROPERTY = "\x01", "\x02"


def encode_properties(props: Mapping[str, str]) -> str:
    """Message properties as Java writes them (``name\\x01value\\x02`` each). Names and values
    are strings without the two separators (which would make another property on the way back)."""
    if not isinstance(props, Mapping):
        raise InvalidInputError(
            f"properties must be a mapping of str to str, got {type(props).__name__} {props!r:.40}", props
        )
    for k, v in props.items():
        for what, text in (("name", k), ("value", v)):
            if not isinstance(text, str):
                raise InvalidInputError(f"property {what} {text!r:.40} is not a str", text)
            if _NAME_VALUE in text or _PROPERTY in text:
                raise InvalidInputError(f"property {what} {text!r:.40} contains a separator (\\x01 or \\x02)", text)
    return "".join(f"{k}{_NAME_VALUE}{v}{_PROPERTY}" for k, v in props.items())


def decode_properties(text: str) -> dict[str, str]:
    """The properties of :func:`encode_properties`' text (items without a name/value separator
    are skipped)."""
    if not isinstance(text, str):
        raise InvalidInputError(f"properties text must be a str, got {type(text).__name__} {text!r:.40}", text)
    out = {}
    for item in text.split(_PROPERTY):
        k, sep, v = item.partition(_NAME_VALUE)
        if sep:
            out[k] = v
    return out


_MAGIC_V1, _MAGIC_V2 = -626843481, -626843477
_BORNHOST_V6, _STOREHOST_V6, _COMPRESSED = 1 << 4, 1 << 5, 1


def decode_messages(data: bytes, *, addr: str = "") -> list[Message]:
    """Decode the body of a pull response: messages in the commit log format (``MessageDecoder``)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidInputError(f"data must be bytes, got {type(data).__name__} {data!r:.40}", data)
    if not isinstance(addr, str):
        raise InvalidInputError(f"addr must be a str, got {type(addr).__name__} {addr!r:.40}", addr)
    data = bytes(data)
    out = []
    pos, n = 0, len(data)
    try:
        while pos < n:
            (total,) = struct.unpack_from(">i", data, pos)
            if total <= 0 or pos + total > n:
                raise RemotingFrameError(f"{addr}: message of {total} bytes at {pos} overruns the {n}-byte body", addr)
            (magic, _crc, queue_id, _flag, queue_offset, phys, sys_flag, born) = struct.unpack_from(
                ">iiiiqqiq", data, pos + 4
            )
            if magic not in (_MAGIC_V1, _MAGIC_V2):
                raise RemotingFrameError(f"{addr}: bad message magic code {magic} at {pos}", addr)
            p = pos + 4 + 44
            p += 20 if sys_flag & _BORNHOST_V6 else 8
            (stored,) = struct.unpack_from(">q", data, p)
            p += 8
            p += 20 if sys_flag & _STOREHOST_V6 else 8
            reconsume, _prepared, body_len = struct.unpack_from(">iqi", data, p)
            p += 16
            if not 0 <= body_len <= pos + total - p:
                raise RemotingFrameError(f"{addr}: message body of {body_len} bytes at {p} overruns its message", addr)
            body = bytes(data[p : p + body_len])
            p += body_len
            if sys_flag & _COMPRESSED and (sys_flag >> 8) & 0x7 in (0, 2):  # zlib (Java's default)
                body = _inflate(body, addr)
            if magic == _MAGIC_V2:
                (topic_len,) = struct.unpack_from(">H", data, p)
                p += 2
            else:
                topic_len = data[p]
                p += 1
            topic = data[p : p + topic_len].decode("utf-8")
            p += topic_len
            (props_len,) = struct.unpack_from(">H", data, p)
            p += 2
            props = decode_properties(data[p : p + props_len].decode("utf-8"))
            out.append(Message(topic, queue_id, queue_offset, body, props, born, stored, reconsume, phys))
            pos += total
    except (struct.error, IndexError, UnicodeDecodeError, zlib.error) as e:
        raise RemotingFrameError(f"{addr}: malformed message at byte {pos} of a pull body: {e}", addr) from None
    return out


#: the largest message body a compressed one may inflate to (a broker's ``maxMessageSize`` is 4 MiB)
MAX_INFLATED_BODY = 16 * 1024 * 1024


def _inflate(body: bytes, addr: str) -> bytes:
    inflater = zlib.decompressobj()
    out = inflater.decompress(body, MAX_INFLATED_BODY)
    if inflater.unconsumed_tail:
        raise RemotingFrameError(f"{addr}: compressed message body inflates beyond {MAX_INFLATED_BODY} bytes", addr)
    if not inflater.eof:
        raise RemotingFrameError(f"{addr}: compressed message body is truncated", addr)
    return out


_QUEUE_ENTRY = re.compile(rb"\{([^{}]*)\}\s*:\s*\{([^{}]*)\}")


def parse_consume_stats(body: bytes, *, addr: str = "") -> dict[tuple[str, str, int], tuple[int, int]]:
    """The ``offsetTable`` of a ``ConsumeStats`` body: ``(topic, broker, queue id) -> (broker
    offset, consumer offset)``. Brokers write its keys as JSON objects (fastjson's map of
    ``MessageQueue``), which is not JSON; each ``{queue}:{offsets}`` entry is parsed on its own.

    >>> parse_consume_stats(b'{"offsetTable":{{"topic":"T","brokerName":"b","queueId":0}:'
    ...                     b'{"brokerOffset":7,"consumerOffset":5}},"consumeTps":0.0}')
    {('T', 'b', 0): (7, 5)}
    """
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise RemotingFrameError(f"{addr}: a GET_CONSUME_STATS body must be bytes, got {body!r:.40}", body)
    out: dict[tuple[str, str, int], tuple[int, int]] = {}
    for key, value in _QUEUE_ENTRY.findall(bytes(body)):
        try:
            mq, off = json.loads(b"{" + key + b"}"), json.loads(b"{" + value + b"}")
            queue = (str(mq["topic"]), str(mq["brokerName"]), int(mq["queueId"]))
            out[queue] = (int(off.get("brokerOffset", -1)), int(off.get("consumerOffset", -1)))
        except (ValueError, KeyError, TypeError) as e:
            raise RemotingFrameError(
                f"{addr}: a GET_CONSUME_STATS entry is not a queue and its offsets: {e}", addr
            ) from None
    return out


def strategy_from_running_info(info: Mapping[str, Any]) -> str | None:
    """The allocation strategy a client reports in ``ConsumerRunningInfo``: the Java client's
    ``properties.allocateMessageQueueStrategy`` is the strategy object's ``toString()`` (its class
    name and hash; the registry knows the classes, :func:`~mqbalance.allocation.registry.from_java_class`);
    a strategy name of ours is taken as is.

    >>> strategy_from_running_info({"properties": {"allocateMessageQueueStrategy":
    ...     "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle@1b6d3586"}})
    'AVG_BY_CIRCLE'
    """
    if not isinstance(info, Mapping):
        raise InvalidInputError(
            f"running info must be a mapping (its JSON), got {type(info).__name__} {info!r:.40}", info
        )
    props = info.get("properties") or {}
    value = props.get("allocateMessageQueueStrategy") if isinstance(props, Mapping) else None
    if not isinstance(value, str) or not value:
        return None
    simple = value.split("@", 1)[0].rsplit(".", 1)[-1]
    name = from_java_class(simple)
    return simple if name is None else name.value


def running_info_queues(info: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """The queues a client holds by its own account: the keys of ``ConsumerRunningInfo.mqTable``
    (its process-queue table) as sorted ``(topic, broker name, queue id)``; a Java client's
    object keys arrive as their JSON text (:func:`~mqbalance.remoting.frame.loads_json`).

    >>> running_info_queues({"mqTable": {'{"brokerName":"b","queueId":1,"topic":"T"}': {"commitOffset": 3}}})
    [('T', 'b', 1)]
    """
    if not isinstance(info, Mapping):
        raise InvalidInputError(
            f"running info must be a mapping (its JSON), got {type(info).__name__} {info!r:.40}", info
        )
    table = info.get("mqTable") or {}
    if not isinstance(table, Mapping):
        raise InvalidInputError(f"running info's mqTable must be a mapping, got {table!r:.60}", table)
    out = []
    for key in table:
        try:
            mq = json.loads(key) if isinstance(key, str) else key
            out.append((str(mq["topic"]), str(mq["brokerName"]), int(mq["queueId"])))
        except (ValueError, KeyError, TypeError):
            raise InvalidInputError(f"running info's mqTable key is not a queue: {key!r:.80}", key) from None
    return sorted(out)


class BrokerClient:
    """Broker requests over one :class:`RemotingClient` (``on_request`` receives the broker's own
    requests, e.g. ``NOTIFY_CONSUMER_IDS_CHANGED``)."""

    def __init__(
        self,
        addr: str,
        *,
        timeout: float = 3.0,
        on_request: RequestHandler | None = None,
        credentials: AclCredentials | None = None,
    ) -> None:
        self.client = RemotingClient(addr, timeout=timeout, on_request=on_request, credentials=credentials)
        self.addr = self.client.addr

    def __repr__(self) -> str:
        return f"BrokerClient({self.addr!r})"

    def _json(self, code: RequestCode, ext: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return _json_body(self.addr, code, self.client.invoke_ok(code, ext, **kw))

    # -- clients and groups --------------------------------------------------------------------
    def heartbeat(
        self,
        client_id: str,
        consumers: Iterable[ConsumerData] = (),
        *,
        producer_groups: Iterable[str] = (),
        timeout: float | None = None,
    ) -> RemotingCommand:
        """``HEART_BEAT`` (34): register (or refresh) ``client_id`` in each group of ``consumers``
        on this connection. The broker then notifies the group's other connections."""
        body = {
            "clientID": client_id,
            "producerDataSet": [{"groupName": g} for g in producer_groups],
            "consumerDataSet": [c.to_json() for c in consumers],
            "heartbeatFingerprint": 0,
            "withoutSub": False,
        }
        data = json.dumps(body, separators=(",", ":")).encode("utf-8")
        return self.client.invoke_ok(RequestCode.HEART_BEAT, None, data, timeout=timeout)

    def unregister_client(self, client_id: str, group: str | None = None, *, producer_group: str | None = None) -> None:
        """``UNREGISTER_CLIENT`` (35): leave ``group`` (the broker notifies the others)."""
        ext = {"clientID": client_id, "consumerGroup": group, "producerGroup": producer_group}
        self.client.invoke_ok(RequestCode.UNREGISTER_CLIENT, ext)

    def consumer_ids(self, group: str) -> list[str]:
        """``GET_CONSUMER_LIST_BY_GROUP`` (38): the ids of the group's clients, in the broker's
        order (unsorted; clients sort them). A group with no client: ``[]`` (the broker answers
        ``SYSTEM_ERROR`` "no consumer for this group")."""
        cmd = self.client.invoke(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group})
        if cmd.code == ResponseCode.SYSTEM_ERROR and (cmd.remark or "").startswith("no consumer for this group"):
            return []
        if cmd.code != ResponseCode.SUCCESS:
            raise self.client.response_error(RequestCode.GET_CONSUMER_LIST_BY_GROUP, cmd)
        ids = _json_body(self.addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, cmd).get("consumerIdList") or []
        return [str(i) for i in ids]

    def consumer_connections(self, group: str, *, timeout: float | None = None) -> ConsumerConnectionInfo | None:
        """``GET_CONSUMER_CONNECTION_LIST`` (203); ``None`` when the group is not online
        (``CONSUMER_NOT_ONLINE``)."""
        cmd = self.client.invoke(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}, timeout=timeout)
        if cmd.code == ResponseCode.CONSUMER_NOT_ONLINE:
            return None
        if cmd.code != ResponseCode.SUCCESS:
            raise self.client.response_error(RequestCode.GET_CONSUMER_CONNECTION_LIST, cmd)
        return ConsumerConnectionInfo.from_json(_json_body(self.addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, cmd))

    def consumer_connections_many(
        self, groups: Sequence[str], *, timeout: float | None = None, window: int = 256
    ) -> list[ConsumerConnectionInfo | None | BrokerResponseError | RemotingError]:
        """:meth:`consumer_connections` of each of ``groups``, pipelined on this connection
        (``window`` in flight): for each group, in order, its connections, ``None`` (not online),
        the broker's refusal (:class:`BrokerResponseError`) or the request's error."""
        requests = [(int(RequestCode.GET_CONSUMER_CONNECTION_LIST), {"consumerGroup": g}) for g in groups]
        out: list[ConsumerConnectionInfo | None | BrokerResponseError | RemotingError] = []
        for got in self.client.invoke_many(requests, timeout=timeout, window=window):
            if isinstance(got, RemotingError):
                out.append(got)
            elif got.code == ResponseCode.CONSUMER_NOT_ONLINE:
                out.append(None)
            elif got.code != ResponseCode.SUCCESS:
                out.append(self.client.response_error(RequestCode.GET_CONSUMER_CONNECTION_LIST, got))
            else:
                try:
                    body = _json_body(self.addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, got)
                except RemotingFrameError as e:
                    out.append(e)
                    continue
                out.append(ConsumerConnectionInfo.from_json(body))
        return out

    def consumer_running_info(
        self, group: str, client_id: str, *, jstack: bool = False, timeout: float | None = None
    ) -> dict[str, Any]:
        """``GET_CONSUMER_RUNNING_INFO`` (307): forwarded by the broker to the client, whose
        ``ConsumerRunningInfo`` JSON comes back (see :func:`strategy_from_running_info`)."""
        ext = {"consumerGroup": group, "clientId": client_id, "jstackEnable": str(jstack).lower()}
        data = self._json(RequestCode.GET_CONSUMER_RUNNING_INFO, ext, timeout=timeout)
        return dict(data)

    def subscription_groups(self) -> dict[str, dict[str, Any]]:
        """``GET_ALL_SUBSCRIPTIONGROUP_CONFIG`` (201): every group's config by name."""
        table = self._json(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).get("subscriptionGroupTable") or {}
        return {str(k): dict(v) for k, v in table.items()}

    # -- topics and offsets --------------------------------------------------------------------
    def topic_configs_body(self) -> bytes:
        """``GET_ALL_TOPIC_CONFIG`` (21): the broker's whole topic table as its JSON body (parse it
        with :meth:`TopicConfigs.from_json`; a reader that keeps the last body parses it only when
        it changed). A broker without the request answers ``REQUEST_CODE_NOT_SUPPORTED``
        (a :class:`BrokerResponseError`)."""
        return self.client.invoke_ok(RequestCode.GET_ALL_TOPIC_CONFIG).body

    def create_topics(self, topics: Iterable[str], *, read: int = 8, write: int = 8, perm: int = 6) -> None:
        """``UPDATE_AND_CREATE_TOPIC_LIST`` (18, RocketMQ 5.x): create every topic of ``topics``
        with one request (the broker writes its topic table once, not once per topic)."""
        configs = [
            {
                "topicName": t,
                "readQueueNums": read,
                "writeQueueNums": write,
                "perm": perm,
                "topicFilterType": "SINGLE_TAG",
                "topicSysFlag": 0,
                "order": False,
                "attributes": {},
            }
            for t in topics
        ]
        body = json.dumps({"topicConfigList": configs}, separators=(",", ":")).encode("utf-8")
        self.client.invoke_ok(
            RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, None, body, timeout=max(self.client.timeout, 60.0)
        )

    def create_subscription_groups(self, groups: Iterable[str]) -> None:
        """``UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST`` (225, RocketMQ 5.x): create every group of
        ``groups`` (default settings) with one request."""
        configs = [{"groupName": g, "consumeEnable": True, "consumeBroadcastEnable": True} for g in groups]
        body = json.dumps({"groupConfigList": configs}, separators=(",", ":")).encode("utf-8")
        self.client.invoke_ok(
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, None, body, timeout=max(self.client.timeout, 60.0)
        )

    # -- topics and offsets --------------------------------------------------------------------
    def create_topic(
        self,
        topic: str,
        *,
        read: int = 8,
        write: int = 8,
        perm: int = PERM_READ | PERM_WRITE,
        order: bool = False,
    ) -> None:
        """``UPDATE_AND_CREATE_TOPIC`` (17) on this broker."""
        ext = {
            "topic": topic,
            "defaultTopic": "TBW102",
            "readQueueNums": read,
            "writeQueueNums": write,
            "perm": perm,
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": 0,
            "order": str(order).lower(),
        }
        self.client.invoke_ok(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """``QUERY_CONSUMER_OFFSET`` (14): the group's committed offset, ``-1`` when it has none."""
        ext = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "setZeroIfNotFound": "false"}
        cmd = self.client.invoke_ok(RequestCode.QUERY_CONSUMER_OFFSET, ext, accept=(ResponseCode.QUERY_NOT_FOUND,))
        if cmd.code == ResponseCode.QUERY_NOT_FOUND:
            return -1
        return int(cmd.ext_fields.get("offset", -1))

    def update_offset(self, group: str, topic: str, queue_id: int, offset: int, *, oneway: bool = False) -> None:
        """``UPDATE_CONSUMER_OFFSET`` (15): commit ``offset`` (the next message to consume)."""
        ext = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "commitOffset": offset}
        if oneway:
            self.client.invoke_oneway(RequestCode.UPDATE_CONSUMER_OFFSET, ext)
        else:
            self.client.invoke_ok(RequestCode.UPDATE_CONSUMER_OFFSET, ext)

    def reset_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """``INVOKE_BROKER_TO_RESET_OFFSET`` (222), as ``mqadmin resetOffset`` sends it: set the
        group's committed offset of one queue to ``offset``, backwards too (a plain commit that
        goes backwards is refused by brokers that guard against stale commits)."""
        ext = {"topic": topic, "group": group, "queueId": queue_id, "offset": offset}
        ext |= {"timestamp": -1, "isForce": "true"}
        self.client.invoke_ok(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext)

    def all_consumer_offsets(self) -> dict[tuple[str, str], dict[int, int]]:
        """``GET_ALL_CONSUMER_OFFSET`` (43): every committed offset on this broker, by
        ``(group, topic)`` then queue id (``{}`` when the broker has none)."""
        cmd = self.client.invoke(RequestCode.GET_ALL_CONSUMER_OFFSET)
        if cmd.code == ResponseCode.SYSTEM_ERROR and "No consumer offset" in (cmd.remark or ""):
            return {}
        if cmd.code != ResponseCode.SUCCESS:
            raise self.client.response_error(RequestCode.GET_ALL_CONSUMER_OFFSET, cmd)
        table = _json_body(self.addr, RequestCode.GET_ALL_CONSUMER_OFFSET, cmd).get("offsetTable") or {}
        out: dict[tuple[str, str], dict[int, int]] = {}
        for key, queues in table.items():
            topic, sep, group = str(key).partition("@")
            if sep:
                out[(group, topic)] = {int(q): int(o) for q, o in (queues or {}).items()}
        return out

    def consume_stats(self, group: str, topic: str | None = None) -> dict[tuple[str, str, int], tuple[int, int]]:
        """``GET_CONSUME_STATS`` (208): for every queue of the group on this broker (of ``topic``
        only, when given), ``(broker max offset, committed offset)`` keyed by ``(topic, broker
        name, queue id)`` — one request per group instead of two per queue. A group without
        offsets here: ``{}``."""
        ext: dict[str, Any] = {"consumerGroup": group}
        if topic is not None:
            ext["topic"] = topic
        cmd = self.client.invoke_ok(RequestCode.GET_CONSUME_STATS, ext)
        return parse_consume_stats(cmd.body, addr=self.addr)

    def max_offset(self, topic: str, queue_id: int) -> int:
        """``GET_MAX_OFFSET`` (30): the offset after the queue's last message."""
        cmd = self.client.invoke_ok(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id})
        return int(cmd.ext_fields.get("offset", 0))

    # -- messages ------------------------------------------------------------------------------
    def send(
        self,
        topic: str,
        queue_id: int,
        body: bytes,
        *,
        producer_group: str = "mqbalance-producer",
        tags: str | None = None,
        keys: str | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> SendResult:
        """``SEND_MESSAGE`` (10) to one queue."""
        props = dict(properties or {})
        if tags is not None:
            props["TAGS"] = tags
        if keys is not None:
            props["KEYS"] = keys
        ext = {
            "producerGroup": producer_group,
            "topic": topic,
            "defaultTopic": "TBW102",
            "defaultTopicQueueNums": 4,
            "queueId": queue_id,
            "sysFlag": 0,
            "bornTimestamp": int(time.time() * 1000),
            "flag": 0,
            "properties": encode_properties(props),
            "reconsumeTimes": 0,
            "unitMode": "false",
            "batch": "false",
        }
        cmd = self.client.invoke_ok(RequestCode.SEND_MESSAGE, ext, bytes(body))
        f = cmd.ext_fields
        return SendResult(f.get("msgId", ""), int(f.get("queueId", queue_id)), int(f.get("queueOffset", -1)))

    def pull(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_nums: int = 32,
        *,
        expression: str = "*",
        suspend_ms: int = 0,
        commit_offset: int | None = None,
        timeout: float | None = None,
    ) -> PullResult:
        """``PULL_MESSAGE`` (11) from ``offset``. ``suspend_ms > 0`` lets the broker hold the
        request that long for new messages (long polling); ``commit_offset`` commits on the way."""
        sys_flag = 4 | (2 if suspend_ms > 0 else 0) | (1 if commit_offset is not None else 0)
        ext = {
            "consumerGroup": group,
            "topic": topic,
            "queueId": queue_id,
            "queueOffset": offset,
            "maxMsgNums": max_nums,
            "sysFlag": sys_flag,
            "commitOffset": commit_offset if commit_offset is not None else 0,
            "suspendTimeoutMillis": suspend_ms,
            "subscription": expression,
            "subVersion": int(time.time() * 1000),
            "expressionType": "TAG",
        }
        wait = (self.client.timeout if timeout is None else timeout) + suspend_ms / 1000
        cmd = self.client.invoke_ok(RequestCode.PULL_MESSAGE, ext, timeout=wait, accept=tuple(_PULL_STATUS))
        f = cmd.ext_fields
        status = _PULL_STATUS[ResponseCode(cmd.code)]
        messages = decode_messages(cmd.body, addr=self.addr) if status is PullStatus.FOUND else []
        return PullResult(
            status,
            messages,
            int(f.get("nextBeginOffset", offset)),
            int(f.get("minOffset", 0)),
            int(f.get("maxOffset", 0)),
            int(f.get("suggestWhichBrokerId", 0)),
        )

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> BrokerClient:
        return self

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
