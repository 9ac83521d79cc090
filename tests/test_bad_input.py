"""Every public function and CLI command, fed bad values by the kind of each parameter.

The walker's table (:data:`TABLE`) lists, per public callable, a valid call and the kind of each
parameter. For every parameter it substitutes values drawn (Hypothesis) from its kind's bad values
— a lone ``str`` where a sequence of strings goes, floats / bools / NaN / negatives where a count
goes, … — and asserts the outcome: a typed :class:`~mqbalance.exceptions.MQBalanceError` (also
``ValueError``/``TypeError`` *subclasses of it*), or, for values the kind allows, a result; never
a bare ``TypeError``/``AttributeError``/``OverflowError``/…, never a silent acceptance of a value
that must be refused. Values that could abort or allocate without bound (huge counts) run in a
subprocess under an address-space cap and a time limit: a panic, abort, MemoryError or timeout
fails the test.

:func:`test_every_public_name_is_walked` fails when a public name (``__all__`` of ``mqbalance``
and of every public submodule) is neither in :data:`TABLE` nor in :data:`EXEMPT` (with a reason),
so a new public function must be added here. To add one: ``E("module.name", call, param=(KIND,
good_value), ...)`` — ``call`` receives the parameters as keyword arguments.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import math
import os
import pkgutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mqbalance
from mqbalance import fault as fault_mod
from mqbalance import kafka
from mqbalance import rocketmq as rocketmq_mod
from mqbalance import sim as sim_mod
from mqbalance.allocation import bulk, ordering, strategies
from mqbalance.allocation.models import MessageQueue
from mqbalance.allocation.registry import StrategySpec, Use, from_java_class, lookup, names_for
from mqbalance.allocation.rooms import PrefixRoomResolver
from mqbalance.allocation.strategies import (
    Avg,
    AvgByCircle,
    Config,
    ConsistentHash,
    ConsistentHashBounded,
    MachineRoom,
    MachineRoomNearby,
    QueueTable,
    Sticky,
)
from mqbalance.exceptions import MQBalanceError, PreviousAssignmentWarning, RemotingConnectError
from mqbalance.fleet.kafka import audit as kafka_audit_mod
from mqbalance.fleet.kafka import snapshot as kafka_snap_mod
from mqbalance.fleet.rocketmq import files as snapshot_files
from mqbalance.fleet.rocketmq import from_json
from mqbalance.fleet.rocketmq import live as live_mod
from mqbalance.history import collector as history_collector_mod
from mqbalance.history import kafka_collector as history_kafka_mod
from mqbalance.history import schema as history_schema_mod
from mqbalance.history import writer as history_writer_mod
from mqbalance.kafka import client_config as kafka_client_config
from mqbalance.kafka import user_data
from mqbalance.rebalance import PushConsumer, RebalanceService
from mqbalance.rebalance.client import ConsumeFromWhere
from mqbalance.remoting import AclCredentials, BrokerClient, NameServer, RemotingClient, RemotingCommand, ResponseCode
from mqbalance.remoting import api as remoting_api
from mqbalance.remoting.codes import code_name
from mqbalance.remoting.frame import MAX_FRAME_BYTES, frame_length, loads_json
from mqbalance.rocketmq import ClusterTransport, RocketMQMember
from mqbalance.versions import Semantics
from terminal import as_at_a_terminal

# ---- kinds of values: what is bad for each ------------------------------------------------------
# A kind maps to a Hypothesis strategy of (value, must_refuse). must_refuse=False: the value may
# be legal (then a result is fine) but still must not raise anything but a typed error.

REFUSE, MAY = True, False
_junk = st.one_of(st.none(), st.booleans(), st.floats(), st.binary(max_size=4), st.builds(object))


def _tag(strategy: st.SearchStrategy[Any], refuse: bool) -> st.SearchStrategy[tuple[Any, bool]]:
    return strategy.map(lambda v: (v, refuse))


# Lone surrogates (JSON's "\\ud800" makes them), NUL and astral characters: refused or accepted,
# never a bare error. (st.text leaves surrogates out, so they are added by hand.)
_text = st.text(max_size=6) | st.sampled_from(["\ud800", "a\udfff", "\x00", "\U0001f600", ""])
_nonstr = st.one_of(st.integers(), st.floats(), st.booleans(), st.binary(max_size=3), st.none())
_small_ints = st.integers(-3, 40)
_big = st.one_of(st.integers(min_value=2**31), st.integers(max_value=-(2**31) - 1))

KINDS: dict[str, st.SearchStrategy[tuple[Any, bool]]] = {
    # free text (names, ids): anything else is refused
    "str": _tag(_text, MAY) | _tag(_nonstr.filter(lambda v: v is not None) | st.lists(_text, max_size=2), REFUSE),
    "str?": _tag(_text | st.none(), MAY) | _tag(st.integers() | st.floats() | st.lists(_text, max_size=2), REFUSE),
    # a sequence of strings: a lone str is refused, not iterated
    "strs": _tag(st.text(min_size=1, max_size=6), REFUSE)
    | _tag(st.lists(_nonstr.filter(lambda v: v is not None), min_size=1, max_size=3), REFUSE)
    | _tag(st.integers() | st.floats(), REFUSE)
    | _tag(st.lists(_text, max_size=3), MAY),
    "strs?": _tag(st.text(min_size=1, max_size=6), REFUSE)
    | _tag(st.integers() | st.floats(), REFUSE)
    | _tag(st.lists(_text, max_size=3) | st.none(), MAY),
    # a non-negative count (small legal ones; the huge ones run in a subprocess, see RISKY)
    "count": _tag(st.integers(max_value=-1), REFUSE)
    | _tag(st.floats() | st.booleans() | st.text(max_size=3) | st.none(), REFUSE)
    | _tag(st.integers(0, 20), MAY)
    | _tag(st.integers(0, 20).map(np.int64), MAY),
    # a Java int
    "int": _tag(_big | st.floats() | st.booleans() | st.text(max_size=3) | st.none(), REFUSE)
    | _tag(_small_ints | _small_ints.map(np.int32), MAY),
    "int?": _tag(_big | st.floats() | st.booleans() | st.text(max_size=3), REFUSE) | _tag(_small_ints | st.none(), MAY),
    # milliseconds in Java's long
    "ms": _tag(st.integers(min_value=2**63) | st.integers(max_value=-(2**63) - 1), REFUSE)
    | _tag(st.sampled_from([math.nan, math.inf, -math.inf]) | st.text(max_size=3) | st.none() | st.booleans(), REFUSE)
    | _tag(st.integers(0, 10**6), MAY),
    # a non-negative finite duration
    "duration": _tag(st.sampled_from([math.nan, math.inf, -math.inf, -1, -0.5]), REFUSE)
    | _tag(st.text(max_size=3) | st.none() | st.booleans(), REFUSE)
    | _tag(st.integers(1, 10**6), MAY),
    "ms?": _tag(st.integers(min_value=2**63) | st.sampled_from([math.nan, math.inf]) | st.text(max_size=3), REFUSE)
    | _tag(st.integers(0, 10**6) | st.none(), MAY),
    "duration?": _tag(st.sampled_from([math.nan, math.inf, -math.inf, -1, -0.5]) | st.text(max_size=3), REFUSE)
    | _tag(st.integers(1, 10**6) | st.none(), MAY),
    # CONSISTENT_HASH_BOUNDED's epsilon
    "epsilon": _tag(st.sampled_from([math.nan, math.inf, -math.inf, -0.5, 10**400]), REFUSE)
    | _tag(st.text(max_size=3) | st.none() | st.booleans(), REFUSE)
    | _tag(st.floats(0, 10), MAY),
    # virtual node count: a Java int; negatives are Java's IllegalArgumentException
    "vnodes": _tag(st.floats() | st.booleans() | st.text(max_size=3) | st.none() | _big, REFUSE)
    | _tag(st.integers(-5, 50), MAY),
    # a column of strings (list, numpy, Arrow)
    "str_column": _tag(st.text(min_size=1, max_size=6), REFUSE)
    | _tag(st.integers() | st.none(), REFUSE)
    | _tag(st.lists(_nonstr, min_size=1, max_size=3), REFUSE),
    # a column of queue ids
    "int_column": _tag(st.text(min_size=1, max_size=4), REFUSE)
    | _tag(st.lists(st.floats(allow_nan=True), min_size=1, max_size=3), REFUSE)
    | _tag(st.lists(st.none() | st.booleans() | st.text(max_size=2), min_size=1, max_size=3), REFUSE)
    | _tag(st.lists(_big, min_size=1, max_size=3), REFUSE)
    | _tag(st.just(np.zeros((2, 2), dtype=np.int64)), REFUSE),
    # Kafka generations, one per member (two members in the table)
    "generations": _tag(
        st.lists(st.floats() | st.booleans() | st.text(max_size=2) | _big, min_size=2, max_size=2), REFUSE
    )
    | _tag(st.text(min_size=1, max_size=3) | st.integers() | st.lists(_small_ints, min_size=3, max_size=4), REFUSE)
    | _tag(st.lists(st.none() | _small_ints, min_size=2, max_size=2), MAY),
    # a list of Java longs (latency tables)
    "longs": _tag(st.text(min_size=1, max_size=3) | st.integers(), REFUSE)
    | _tag(st.lists(st.floats() | st.booleans() | st.none() | st.text(max_size=2), min_size=1, max_size=3), REFUSE)
    | _tag(st.lists(st.integers(min_value=2**63) | st.integers(max_value=-(2**63) - 1), min_size=1, max_size=2), REFUSE)
    | _tag(st.lists(st.integers(-5, 10**6), max_size=3), MAY),
    # a seed: any int
    "seed": _tag(st.floats() | st.booleans() | st.text(max_size=3) | st.none(), REFUSE) | _tag(st.integers(), MAY),
    # a mapping
    "mapping": _tag(st.text(min_size=1, max_size=4) | st.integers() | st.lists(st.integers(), max_size=2), REFUSE)
    | _tag(st.dictionaries(_text, _junk | st.integers(), max_size=2), MAY),
    # {topic: partition count}
    "partitions": _tag(st.dictionaries(_text, st.integers(max_value=-1), min_size=1, max_size=2), REFUSE)
    | _tag(st.dictionaries(_text, st.floats() | st.booleans() | st.text(max_size=2), min_size=1, max_size=2), REFUSE)
    | _tag(st.dictionaries(st.integers(), st.integers(0, 3), min_size=1, max_size=2), REFUSE)
    | _tag(st.text(min_size=1, max_size=3) | st.lists(st.integers(), max_size=2), REFUSE)
    | _tag(st.dictionaries(_text, st.integers(0, 30), max_size=3), MAY),
    # (topic, partition) pairs
    "pairs": _tag(st.text(min_size=1, max_size=4) | st.integers(), REFUSE)
    | _tag(st.lists(st.tuples(_text, st.floats() | st.booleans() | _big), min_size=1, max_size=2), REFUSE)
    | _tag(st.lists(st.integers() | st.none(), min_size=1, max_size=2), REFUSE)
    | _tag(st.lists(st.tuples(st.integers(), st.integers(0, 3)), min_size=1, max_size=2), REFUSE)
    | _tag(st.lists(st.tuples(_text, st.integers(0, 5)), max_size=3), MAY),
    # a list of MessageQueue
    "queues": _tag(st.text(min_size=1, max_size=4) | st.integers(), REFUSE)
    | _tag(st.lists(_junk | st.text(max_size=2) | st.integers(), min_size=1, max_size=3), REFUSE),
    # bytes
    "bytes": _tag(
        st.integers() | st.text(min_size=1, max_size=3) | st.floats() | st.lists(st.integers(), max_size=2), REFUSE
    )
    | _tag(st.binary(max_size=40) | st.none(), MAY),
    # a strategy (name or object)
    "strategy": _tag(_text, MAY) | _tag(st.integers() | st.floats() | st.none() | st.lists(_text, max_size=2), REFUSE),
    # an object of a library type: anything else is refused
    "object?": _tag(st.booleans() | st.floats() | st.text(max_size=3) | st.integers(), REFUSE) | _tag(st.none(), MAY),
    "object": _tag(_junk | st.text(max_size=3) | st.integers() | st.lists(st.integers(), max_size=2), REFUSE),
    # anything may be passed (the parameter is only logged or optional); still never a bare error
    "any": _tag(_junk | _text | st.integers() | st.lists(st.integers(), max_size=2), MAY),
}


def _closed_loopback_port() -> int:
    """A loopback port nothing listens on (bound, then released): connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


CLOSED_PORT = _closed_loopback_port()
_UNREACHABLE = [f"127.0.0.1:{CLOSED_PORT}", f"[::1]:{CLOSED_PORT}", f" 127.0.0.1:{CLOSED_PORT} "]
#: "host:port" that is not: no port, port 0 or beyond 65535, not ASCII digits, a host that is not one
_MALFORMED_ADDRS = [
    "",
    " ",
    "host",
    "host:",
    ":9876",
    "127.0.0.1:0",
    "127.0.0.1:65536",
    "127.0.0.1:-1",
    "127.0.0.1:1.5",
    "127.0.0.1:9" + "9" * 30,
    "127.0.0.1:\u00b2",  # a superscript two: str.isdigit() says yes, int() says no
    "127.0.0.1:\u0663",  # an Arabic-Indic three
    "\x00:9876",
    "\ud800:9876",
    "a b:9876",
    "http://127.0.0.1:9876",
    "127.0.0.1:9876/x",
]
# A timeout (seconds): finite, above 0, at most a day.
_BAD_TIMEOUTS = [math.nan, math.inf, -math.inf, -1, -0.5, 0, 0.0, -0.0, 10**400, 1e10, np.float64("nan")]
_NOT_STR = st.integers() | st.floats() | st.booleans() | st.binary(max_size=3) | st.none() | st.lists(_text, max_size=2)
KINDS |= {
    # one "host:port"
    "addr": _tag(st.sampled_from(_MALFORMED_ADDRS) | st.text(alphabet=st.characters(blacklist_characters=":")), REFUSE)
    | _tag(_NOT_STR, REFUSE)
    | _tag(st.sampled_from(_UNREACHABLE), MAY),
    # name servers: "host:port" or several joined by ";"
    "namesrv": _tag(st.sampled_from([*_MALFORMED_ADDRS, ";", " ; ", f"{_UNREACHABLE[0]};host"]), REFUSE)
    | _tag(_NOT_STR, REFUSE)
    | _tag(st.sampled_from([*_UNREACHABLE, f"{_UNREACHABLE[0]};{_UNREACHABLE[1]}", f";{_UNREACHABLE[0]};"]), MAY),
    "timeout": _tag(st.sampled_from(_BAD_TIMEOUTS), REFUSE)
    | _tag(st.text(max_size=3) | st.none() | st.booleans() | st.binary(max_size=2), REFUSE)
    | _tag(st.floats(0.01, 1.0) | st.integers(1, 3), MAY),
    # a response or request code: any int (unknown ones are named as such)
    "code": _tag(st.floats() | st.booleans() | st.text(max_size=3) | st.none(), REFUSE) | _tag(st.integers(), MAY),
}


#: Values that could allocate without bound or abort if a count went unchecked: run in a capped
#: subprocess; each must be refused with a typed error (or computed, if it is small enough).
RISKY: dict[str, list[Any]] = {
    "count": [2**31 - 1, 2**31, 10**9, 2**62, 2**64],
    "partitions": [{"t": 2**31 - 1}, {"t": 10**9}, {"a": 2**30, "b": 2**30}],
    "int": [2**31 - 1, -(2**31)],
    "vnodes": [2**24, 2**31 - 1, 2**40],
}


# ---- the table ----------------------------------------------------------------------------------


@dataclass
class Entry:
    name: str
    call: Callable[..., Any]
    params: dict[str, tuple[str, Any]] = field(default_factory=dict)


def E(name: str, call: Callable[..., Any], /, **params: tuple[str, Any]) -> Entry:
    return Entry(name, call, params)


def Q(n: int = 4) -> list[MessageQueue]:
    return [MessageQueue("T", "b", i) for i in range(n)]


def _publish() -> fault_mod.TopicPublishInfo:
    return fault_mod.TopicPublishInfo.from_route("t", [fault_mod.QueueData("a", 6, 2), fault_mod.QueueData("b", 6, 2)])


def _fs(**kw: Any) -> fault_mod.MQFaultStrategy:
    return fault_mod.MQFaultStrategy(send_latency_fault_enable=True, clock=fault_mod.ManualClock(0), **kw)


_MODELS = {"a": fault_mod.BrokerModel(5), "b": fault_mod.BrokerModel(7)}
_SCENARIO = {"topics": {"T": {"queues_per_broker": 2}}, "group": {"consumers": 2}, "duration": "30s"}
_SNAPSHOT = {
    "topics": {"T": {"queueDatas": [{"brokerName": "b", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}]}},
    "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": "c1"}, {"clientId": "c2"}]}},
}


_GOOD_SNAPSHOT_FILE = Path(tempfile.mkdtemp(prefix="mqbalance-bad-input-")) / "snapshot.json"
_GOOD_SNAPSHOT_FILE.write_text(json.dumps(_SNAPSHOT))
_KAFKA_SNAPSHOT = {
    "kind": "kafka",
    "topics": {"t": {"partitions": 2}},
    "groups": {
        "g": {"state": "Stable", "members": [{"memberId": "m", "subscription": ["t"], "assignment": {"t": [0]}}]}
    },
}
_HISTORY = str(_GOOD_SNAPSHOT_FILE.with_name("history"))
history_writer_mod.open_history(_HISTORY, create=True)
_GOOD_KAFKA_SNAPSHOT_FILE = _GOOD_SNAPSHOT_FILE.with_name("kafka.json")
_GOOD_KAFKA_SNAPSHOT_FILE.write_text(json.dumps(_KAFKA_SNAPSHOT))


class _Transport:
    def send_heartbeat(self, client: Any) -> None: ...
    def find_consumer_id_list(self, topic: str, group: str) -> list[str]:
        return ["c1"]

    def query_offset(self, group: str, mq: Any) -> int:
        return 0

    def max_offset(self, mq: Any) -> int:
        return 0

    def commit_offset(self, group: str, mq: Any, offset: int) -> None: ...
    def unregister(self, client: Any) -> None: ...


def _unreachable(make: Callable[[], Any]) -> Any:
    """``make()`` against a closed loopback port: a :class:`RemotingConnectError` there means every
    argument was accepted (the call got as far as connecting); anything else is the verdict."""
    try:
        made = make()
    except RemotingConnectError as e:
        if str(CLOSED_PORT) not in str(e):  # refused by the port, not by a check
            raise AssertionError(f"not a connection to the closed port: {e}") from None
        return None
    close = getattr(made, "close", None)
    if close is not None:
        close()
    return made


def _frame(header: bytes, body: bytes = b"", *, kind: int = 0, header_len: int | None = None) -> bytes:
    """A frame around a raw header (``kind``: the serialisation type byte)."""
    mark = (kind << 24) | (len(header) if header_len is None else header_len)
    return struct.pack(">II", 4 + len(header) + len(body), mark) + header + body


def _message(
    body: bytes, *, sys_flag: int = 0, body_len: int | None = None, total: int | None = None, topic: bytes = b"T"
) -> bytes:
    """One stored message in the commit-log layout ``MessageDecoder`` reads (v1 magic, IPv4 hosts)."""
    props = b"TAGS\x01a\x02"
    rest = (
        struct.pack(">iiiqqiq", 0, 3, 0, 5, 1005, sys_flag, 1_700_000_000_000)
        + bytes([127, 0, 0, 1])
        + struct.pack(">iq", 5555, 1_700_000_000_123)
        + bytes([127, 0, 0, 1])
        + struct.pack(">iiqi", 10911, 0, 0, len(body) if body_len is None else body_len)
        + body
        + bytes([len(topic)])
        + topic
        + struct.pack(">H", len(props))
        + props
    )
    return struct.pack(">ii", 8 + len(rest) if total is None else total, -626843481) + rest


KINDS |= {
    # a whole frame from a hostile server: refused as a RemotingFrameError, never a bare error
    "frame": _tag(
        st.sampled_from(
            [
                _frame(b"[" * 5000 + b"]" * 5000),  # nested beyond the recursion limit
                _frame(b"1" * 5000),  # beyond int()'s digit limit
                _frame(b'{"code": Infinity}'),
                _frame(b'{"code": NaN}'),
                _frame(b'{"code": 1e400}'),
                _frame(b'{"code": 99999999999999999999}'),
                _frame(b'{"opaque": "' + b"9" * 5000 + b'"}'),
                _frame(b'{"flag": true}'),
                _frame(b'{"code": [1]}'),
                _frame(b'{"version": "x"}'),
                _frame(b'{"extFields": [1, 2]}'),
                _frame(b"\xff\xfe{}"),
                _frame(b"[1]"),
                _frame(b"{}", kind=1),  # RocketMQ's binary serialisation
                _frame(b"{}", header_len=10**6),
                _frame(b"{}")[:-1],
                struct.pack(">I", 2**31) + _frame(b"{}")[4:],
                b"\x00\x00\x00\x02ab",
            ]
        ),
        REFUSE,
    )
    | _tag(st.binary(max_size=24).map(lambda b: struct.pack(">i", len(b)) + b), MAY),
    # a pull body from a hostile broker
    "messages": _tag(
        st.sampled_from(
            [
                _message(b"x", body_len=-5),  # a negative body length
                _message(b"x", body_len=10**6),  # a body beyond its message
                _message(b"x", total=10**6),  # a message beyond the body
                _message(b"x", total=-1),
                _message(zlib.compress(b"\0" * (20 << 20)), sys_flag=1),  # inflates to 20 MiB
                _message(zlib.compress(b"zipped")[:-3], sys_flag=1),  # a truncated zlib stream
                _message(b"not zlib", sys_flag=1),
                _message(b"x", topic=b"\xff"),
                _message(b"x")[:-2],
            ]
        ),
        REFUSE,
    )
    | _tag(st.binary(max_size=80), MAY),
}


TABLE: list[Entry] = [
    # mqbalance (root)
    E(
        "allocation.models.MessageQueue",
        MessageQueue,
        topic=("str", "T"),
        broker_name=("str", "b"),
        queue_id=("int", 3),
    ),
    E("allocation.models.java_string_key", mqbalance.java_string_key, s=("str", "x")),
    E("allocation.ordering.sort_client_ids", ordering.sort_client_ids, ids=("strs?", ["b", "a"])),
    E("allocation.ordering.sort_queues", ordering.sort_queues, queues=("queues", Q())),
    E("allocation.registry.strategy", lambda name: mqbalance.strategy(name), name=("strategy", "AVG")),
    E(
        "allocation.registry.strategy(CONSISTENT_HASH)",
        lambda vnodes, charset: mqbalance.strategy("CONSISTENT_HASH", virtual_node_cnt=vnodes, charset=charset),
        vnodes=("vnodes", 3),
        charset=("str", "UTF-8"),
    ),
    E("allocation.registry.lookup", lambda text: lookup(text), text=("str", "AVG")),
    E(
        "allocation.registry.from_java_class",
        lambda name: from_java_class(name),
        name=("str", "AllocateMessageQueueAveragely"),
    ),
    E(
        "allocation.registry.StrategySpec.parse",
        lambda config: StrategySpec.parse(config).build(),
        config=("any", "AVG"),
    ),
    E(
        "allocation.strategies.AllocateStrategy.allocate",
        lambda group, cid, queues, ids: Avg().allocate(group, cid, queues, ids),
        group=("any", "cg"),
        cid=("str?", "c1"),
        queues=("queues", Q()),
        ids=("strs?", ["c1", "c2"]),
    ),
    E(
        "allocation.strategies.AllocateStrategy.assign",
        lambda queues, ids: AvgByCircle().assign(queues, ids, java_sort=True),
        queues=("queues", Q()),
        ids=("strs?", ["c1", "c2"]),
    ),
    E("allocation.strategies.Avg", lambda: Avg().assign(Q(), ["c"])),
    E("allocation.strategies.AvgByCircle", lambda: AvgByCircle().assign(Q(), ["c"])),
    E(
        "allocation.strategies.ConsistentHash",
        lambda vnodes, charset: ConsistentHash(vnodes, charset=charset).assign(Q(), ["a", "b"]),
        vnodes=("vnodes", 3),
        charset=("str", "UTF-8"),
    ),
    E(
        "allocation.strategies.ConsistentHashBounded",
        lambda vnodes, eps: ConsistentHashBounded(vnodes, epsilon=eps).assign(Q(), ["a", "b"]),
        vnodes=("vnodes", 3),
        eps=("epsilon", 0.25),
    ),
    E("allocation.strategies.Sticky", lambda ids: Sticky().assign(Q(), ids, previous={}), ids=("strs?", ["a"])),
    E("allocation.strategies.MachineRoom", lambda idcs: MachineRoom(idcs).assign(Q(), ["a"]), idcs=("strs?", ["hz"])),
    E(
        "allocation.strategies.MachineRoomNearby",
        lambda inner, resolver: MachineRoomNearby(inner, resolver).assign(Q(), ["a"]),
        inner=("object", Avg()),
        resolver=("object?", PrefixRoomResolver()),
    ),
    E("allocation.strategies.Config", lambda queues: Config(queues).assign(Q(), ["a"]), queues=("queues", Q(2))),
    E("allocation.strategies.QueueTable", lambda queues: QueueTable(queues), queues=("queues", Q())),
    E("allocation.rooms.PrefixRoomResolver", lambda sep: PrefixRoomResolver(sep).broker_room(Q()[0]), sep=("str", "@")),
    E("versions.Semantics", lambda value: Semantics.parse(value), value=("str", "5.x")),
    # bulk
    E(
        "allocation.bulk.owners",
        lambda strategy, topics, brokers, queue_ids, consumers: bulk.owners(
            strategy, topics, brokers, queue_ids, consumers
        ),
        strategy=("strategy", "AVG"),
        topics=("str_column", ["T"] * 3),
        brokers=("str_column", ["b"] * 3),
        queue_ids=("int_column", [0, 1, 2]),
        consumers=("strs?", ["c1", "c2"]),
    ),
    E(
        "allocation.bulk.owners(previous)",
        lambda previous: bulk.owners("STICKY", ["T"] * 2, ["b"] * 2, [0, 1], ["c1"], previous=previous),
        previous=("strs", [None, "c1"]),
    ),
    E(
        "allocation.bulk.owners_by_pair",
        lambda topics, queue_ids, bounds, strategies, consumers: bulk.owners_by_pair(
            topics, ["b"] * 3, queue_ids, bounds, strategies, consumers
        ),
        topics=("str_column", ["A", "A", "B"]),
        queue_ids=("int_column", [1, 0, 0]),
        bounds=("int_column", [0, 2, 3]),
        strategies=("strs", ["AVG", "AVG"]),
        consumers=("queues", [["y", "x"], ["z"]]),
    ),
    E(
        "allocation.bulk.owners_by_pair_in_column",
        lambda topics, queue_ids, bounds, strategies, ids, starts, stops: bulk.owners_by_pair_in_column(
            topics, ["b"] * 3, queue_ids, bounds, strategies, ids, starts, stops
        ),
        topics=("str_column", ["A", "A", "B"]),
        queue_ids=("int_column", [1, 0, 0]),
        bounds=("int_column", [0, 2, 3]),
        strategies=("strs", ["AVG", "AVG"]),
        ids=("str_column", ["y", "x", "z"]),
        starts=("int_column", [0, 2]),
        stops=("int_column", [2, 3]),
    ),
    # kafka
    E("kafka.assignor", lambda name: kafka.assignor(name), name=("strategy", "range")),
    E("kafka.client_config.parse_properties", kafka_client_config.parse_properties, text=("str", "a=b")),
    E(
        "kafka.client_config.client_config_from_properties",
        kafka_client_config.client_config_from_properties,
        properties=("mapping", {"security.protocol": "PLAINTEXT"}),
    ),
    E(
        "kafka.Assignor.assign",
        lambda name, ppt, subs: kafka.assignor(name).assign(ppt, subs),
        name=("strategy", "sticky"),
        ppt=("partitions", {"t": 4}),
        subs=("mapping", {"c1": ["t"], "c2": ["t"]}),
    ),
    E(
        "kafka.Subscription",
        lambda topics, owned, generation, gid: kafka.assignor("cooperative-sticky").assign(
            {"t": 4}, {"c": kafka.Subscription(topics, owned, generation, gid)}
        ),
        topics=("strs", ["t"]),
        owned=("pairs", [("t", 0)]),
        generation=("int?", 1),
        gid=("str?", None),
    ),
    E(
        "kafka.zk_assign",
        lambda name, ppt, consumers: kafka.zk_assign(name, ppt, consumers),
        name=("strategy", "roundrobin"),
        ppt=("partitions", {"t": 5}),
        consumers=("mapping", {"C1": {"t": 2}}),
    ),
    E(
        "kafka.server_assign",
        lambda name, members, topics: kafka.server_assign(name, members, topics),
        name=("strategy", "uniform"),
        members=("queues", [{"member_id": "a", "subscribed_topic_ids": ["AAAAAAAAAAAAAAAAAAAAAQ"]}]),
        topics=("partitions", {"AAAAAAAAAAAAAAAAAAAAAQ": 3}),
    ),
    E(
        "kafka.ServerMember",
        lambda member_id, subs: kafka.server_assign("uniform", [kafka.ServerMember(member_id, subs)], {}),
        member_id=("str", "a"),
        subs=("strs", []),
    ),
    E(
        "kafka.server_assign_columns",
        lambda name, topic_ids, counts, member_ids, offsets, subs: kafka.server_assign_columns(
            name, topic_ids, counts, member_ids, offsets, subs
        ),
        name=("strategy", "range"),
        topic_ids=("str_column", ["AAAAAAAAAAAAAAAAAAAAAQ"]),
        counts=("int_column", [3]),
        member_ids=("str_column", ["a"]),
        offsets=("int_column", [0, 1]),
        subs=("int_column", [0]),
    ),
    E(
        "kafka.zk_assign(streams)",
        lambda streams: kafka.zk_assign("range", {"t": 5}, {"C1": {"t": streams}}),
        streams=("count", 2),
    ),
    E(
        "kafka.assign_columns",
        lambda ppt, ids, topics, generations: kafka.assign_columns(
            "sticky", ppt, ids, topics, owned=([0], ["t"], [1]), generations=generations
        ),
        ppt=("partitions", {"t": 4}),
        ids=("strs", ["a", "b"]),
        topics=("queues", [["t"], ["t"]]),
        generations=("generations", [1, None]),
    ),
    E(
        "kafka.assign_columns(owned)",
        lambda members, parts: kafka.assign_columns("sticky", {"t": 4}, ["a"], [["t"]], owned=(members, ["t"], parts)),
        members=("int_column", [0]),
        parts=("int_column", [1]),
    ),
    E(
        "kafka.check_assignment",
        lambda ppt, subs, assignment: kafka.check_assignment(ppt, subs, assignment),
        ppt=("partitions", {"t": 2}),
        subs=("mapping", {"a": ["t"]}),
        assignment=("mapping", {"a": [("t", 0), ("t", 1)]}),
    ),
    E("kafka.user_data.encode", user_data.encode, partitions=("pairs", [("t", 0)]), generation=("int?", 7)),
    E("kafka.user_data.decode", user_data.decode, data=("bytes", user_data.encode([("t", 1)], 3))),
    # fault
    E("fault.ManualClock", lambda now, ms: fault_mod.ManualClock(now).advance(ms), now=("ms", 0), ms=("ms", 5)),
    E("fault.ThreadLocalIndex", lambda initial: fault_mod.ThreadLocalIndex(initial=initial), initial=("int?", 3)),
    E("fault.ThreadLocalIndex.reset", lambda value: fault_mod.ThreadLocalIndex().reset(value), value=("int?", 3)),
    E(
        "fault.QueueData",
        fault_mod.QueueData,
        broker_name=("str", "a"),
        perm=("int", 6),
        write_queue_nums=("int", 4),
        read_queue_nums=("int?", 4),
    ),
    E(
        "fault.TopicPublishInfo",
        lambda queues: fault_mod.TopicPublishInfo(queues).select_one_message_queue(),
        queues=("queues", Q()),
    ),
    E(
        "fault.TopicPublishInfo.from_route",
        lambda topic, qds, masters: fault_mod.TopicPublishInfo.from_route(topic, qds, masters),
        topic=("str", "t"),
        qds=("queues", [fault_mod.QueueData("a", 6, 2)]),
        masters=("strs?", None),
    ),
    E(
        "fault.TopicPublishInfo.select_one_message_queue",
        lambda last: _publish().select_one_message_queue(last),
        last=("str?", "a"),
    ),
    E(
        "fault.MQFaultStrategy",
        lambda semantics, latency_max, nad, detect: _fs(
            semantics=semantics, latency_max=latency_max, not_available_duration=nad, detect_interval=detect
        ),
        semantics=("str", "4.x"),
        latency_max=("longs", [10, 20]),
        nad=("longs", [0, 100]),
        detect=("ms", 2000),
    ),
    E(
        "fault.MQFaultStrategy.update_fault_item",
        lambda broker, latency: _fs().update_fault_item(broker, latency, False),
        broker=("str", "a"),
        latency=("ms", 30),
    ),
    E(
        "fault.MQFaultStrategy.compute_not_available_duration",
        lambda latency: _fs().compute_not_available_duration(latency),
        latency=("ms", 30),
    ),
    E("fault.MQFaultStrategy.is_available", lambda broker: _fs().is_available(broker), broker=("str", "a")),
    E("fault.MQFaultStrategy.is_reachable", lambda broker: _fs().is_reachable(broker), broker=("str", "a")),
    E("fault.MQFaultStrategy.remove", lambda broker: _fs().remove(broker), broker=("str", "a")),
    E(
        "fault.MQFaultStrategy.select_one_message_queue",
        lambda info, last, reset_to: _fs().select_one_message_queue(info, last, True, reset_to=reset_to),
        info=("object", _publish()),
        last=("str?", "a"),
        reset_to=("int?", None),
    ),
    E(
        "fault.MQFaultStrategy.detect_round",
        lambda resolve, detect: _fs(semantics="5.x").detect_round(resolve, detect),
        resolve=("mapping", {"a": "1.2.3.4"}),
        detect=("mapping", {"1.2.3.4": True}),
    ),
    E(
        "fault.MQFaultStrategy.simulate",
        lambda info, models, sends, interval, start, retries, seed: _fs().simulate(
            info,
            models,
            sends=sends,
            interval_ms=interval,
            start_ms=start,
            retry_times_when_send_failed=retries,
            seed=seed,
        ),
        info=("object", _publish()),
        models=("mapping", _MODELS),
        sends=("count", 5),
        interval=("ms", 1),
        start=("ms?", 0),
        retries=("count", 2),
        seed=("count", 0),
    ),
    E(
        "fault.BrokerModel",
        lambda latency, jitter, rate: _fs().simulate(
            _publish(), {"a": fault_mod.BrokerModel(latency, jitter, rate), "b": _MODELS["b"]}, sends=3
        ),
        latency=("duration", 5),
        jitter=("duration", 0),
        rate=("epsilon", 0.0),
    ),
    # sim
    E("sim.scenario_from_dict", lambda data: sim_mod.scenario_from_dict(data), data=("mapping", _SCENARIO)),
    E(
        "sim.scenario_from_dict(duration)",
        lambda duration, sample: sim_mod.scenario_from_dict(
            {**_SCENARIO, "duration": duration, "sample_interval": sample}
        ),
        duration=("duration?", 30),
        sample=("duration?", 1),
    ),
    E("sim.load_scenario", lambda path: sim_mod.load_scenario(path), path=("str", "pause-on-join")),
    E("sim.scenario_strategy", lambda config: sim_mod.scenario_strategy(config, "s"), config=("any", "AVG")),
    E("allocation.registry.names_for", lambda use: names_for(use), use=("object", Use.SCENARIO)),
    E(
        "allocation.registry.StrategySpec.parse(use)",
        lambda config, use: StrategySpec.parse(config, use=use),
        config=("any", "AVG"),
        use=("object?", Use.FLEET_AUDIT),
    ),
    E(
        "sim.simulate",
        lambda scenario, strategy: sim_mod.simulate(scenario, strategy=strategy),
        scenario=("any", _SCENARIO),
        strategy=("str?", "AVG"),
    ),
    E(
        "sim.compare",
        lambda scenario, strategies: sim_mod.compare(scenario, strategies),
        scenario=("any", _SCENARIO),
        strategies=("strs?", ["AVG"]),
    ),
    E(
        "sim.Simulation",
        lambda scenario: sim_mod.Simulation(scenario).run(),
        scenario=("object", sim_mod.scenario_from_dict(_SCENARIO)),
    ),
    E(
        "sim.scenario.parse_duration_ms",
        lambda value: sim_mod.scenario.parse_duration_ms(value, "x"),
        value=("duration", 3),
    ),
    # fleet
    E(
        "fleet.snapshot_from_dict",
        lambda data, source: from_json.snapshot_from_dict(data, source),
        data=("mapping", _SNAPSHOT),
        source=("str", "<s>"),
    ),
    E("fleet.load_snapshot", lambda path: snapshot_files.load_snapshot(path), path=("str", str(_GOOD_SNAPSHOT_FILE))),
    E(
        "fleet.audit_snapshot",
        lambda snapshot, what_if, previous: mqbalance.fleet.audit_snapshot(
            snapshot, what_if=what_if, previous=previous
        ),
        snapshot=("object", from_json.snapshot_from_dict(_SNAPSHOT)),
        what_if=("any", "AVG,STICKY"),
        previous=("object?", from_json.snapshot_from_dict(_SNAPSHOT)),
    ),
    E("fleet.what_if_candidates", lambda values: mqbalance.fleet.what_if_candidates(values), values=("any", "AVG")),
    # fleet: the interface for both kinds
    E(
        "fleet.load_any_snapshot",
        lambda path: mqbalance.fleet.load_any_snapshot(path),
        path=("str", str(_GOOD_SNAPSHOT_FILE)),
    ),
    E(
        "fleet.audit",
        lambda snapshot, what_if, previous: mqbalance.fleet.audit(snapshot, what_if=what_if, previous=previous),
        snapshot=("object", from_json.snapshot_from_dict(_SNAPSHOT)),
        what_if=("any", "AVG,STICKY"),
        previous=("object?", from_json.snapshot_from_dict(_SNAPSHOT)),
    ),
    E(
        "fleet.drains",
        lambda snapshot, previous: mqbalance.fleet.drains(snapshot, previous),
        snapshot=("object", from_json.snapshot_from_dict(_SNAPSHOT)),
        previous=("object?", from_json.snapshot_from_dict(_SNAPSHOT)),
    ),
    E(
        "fleet.check_snapshots",
        lambda snapshot, previous: mqbalance.fleet.check_snapshots(snapshot, previous),
        snapshot=("object", from_json.snapshot_from_dict(_SNAPSHOT)),
        previous=("object?", from_json.snapshot_from_dict(_SNAPSHOT)),
    ),
    E(
        "fleet.describe",
        lambda snapshot: mqbalance.fleet.describe(snapshot),
        snapshot=("object", from_json.snapshot_from_dict(_SNAPSHOT)),
    ),
    E(
        "fleet.unit_count",
        lambda snapshot: mqbalance.fleet.unit_count(snapshot),
        snapshot=("object", from_json.snapshot_from_dict(_SNAPSHOT)),
    ),
    E(
        "fleet.audits_on_spark",
        lambda snapshot: mqbalance.fleet.audits_on_spark(snapshot),
        snapshot=("object", from_json.snapshot_from_dict(_SNAPSHOT)),
    ),
    E(
        "fleet.what_if_for",
        lambda snapshot, option: mqbalance.fleet.what_if_for(snapshot, option),
        snapshot=("object", from_json.snapshot_from_dict(_SNAPSHOT)),
        option=("str?", "AVG"),
    ),
    E(
        "fleet.assign_snapshot",
        lambda snapshot: mqbalance.fleet.assign_snapshot(snapshot),
        snapshot=("object", from_json.snapshot_from_dict(_SNAPSHOT)),
    ),
    E(
        "fleet.example_fleet",
        lambda seed, brokers, topics, groups: mqbalance.fleet.example_fleet(
            seed, brokers=brokers, topics=topics, groups=groups
        ),
        seed=("seed", 7),
        brokers=("count", 3),
        topics=("count", 4),
        groups=("count", 5),
    ),
    E("fleet.example_pair", lambda seed: mqbalance.fleet.example_pair(seed), seed=("seed", 7)),
    E(
        "fleet.scaled_fleet",
        lambda groups, queues, brokers, clients: mqbalance.fleet.scaled_fleet(
            groups, queues_per_topic=queues, brokers=brokers, clients_per_group=clients
        ),
        groups=("count", 3),
        queues=("count", 8),
        brokers=("count", 2),
        clients=("count", 2),
    ),
    # remoting (no server: a closed loopback port where a well-formed address is needed)
    E(
        "remoting.frame.RemotingCommand.decode",
        lambda frame, max_frame_bytes: RemotingCommand.decode(frame, max_frame_bytes=max_frame_bytes),
        frame=("bytes", RemotingCommand(105, opaque=7, ext_fields={"topic": "T"}).encode()),
        max_frame_bytes=("count", MAX_FRAME_BYTES),
    ),
    E("remoting.frame.RemotingCommand.decode(hostile)", RemotingCommand.decode, frame=("frame", _frame(b"{}"))),
    E(
        "remoting.frame.frame_length",
        lambda prefix, max_frame_bytes: frame_length(prefix, max_frame_bytes=max_frame_bytes),
        prefix=("bytes", b"\x00\x00\x00\x10"),
        max_frame_bytes=("count", MAX_FRAME_BYTES),
    ),
    E("remoting.frame.loads_json", loads_json, data=("bytes", b'{"brokerAddrs":{0:"a:1"}}')),
    E(
        "remoting.api.decode_messages",
        lambda data, addr: remoting_api.decode_messages(data, addr=addr),
        data=("bytes", _message(b"hello")),
        addr=("str", "127.0.0.1:10911"),
    ),
    E("remoting.api.decode_messages(hostile)", remoting_api.decode_messages, data=("messages", _message(b"x"))),
    E("remoting.api.decode_properties", remoting_api.decode_properties, text=("str", "TAGS\x01a\x02")),
    E(
        "remoting.api.parse_consume_stats",
        lambda body: remoting_api.parse_consume_stats(body),
        body=("bytes", b'{"offsetTable":{{"topic":"T","brokerName":"b","queueId":0}:{"brokerOffset":7}}}'),
    ),
    E("remoting.api.encode_properties", remoting_api.encode_properties, props=("mapping", {"TAGS": "a"})),
    E(
        "remoting.api.strategy_from_running_info",
        remoting_api.strategy_from_running_info,
        info=("mapping", {"properties": {"allocateMessageQueueStrategy": "AllocateMessageQueueAveragely@1"}}),
    ),
    E(
        "remoting.api.running_info_queues",
        remoting_api.running_info_queues,
        info=("mapping", {"mqTable": {'{"topic":"T","brokerName":"b","queueId":0}': {"commitOffset": 3}}}),
    ),
    E("remoting.codes.code_name", code_name, kind=("object", ResponseCode), code=("code", 17)),
    E(
        "remoting.client.AclCredentials",
        lambda access_key, secret_key, token, fields, body: AclCredentials(
            access_key, secret_key, security_token=token
        ).sign(fields, body),
        access_key=("str", "ak"),
        secret_key=("str", "sk"),
        token=("str?", None),
        fields=("mapping", {"topic": "T"}),
        body=("bytes", b"{}"),
    ),
    E(
        "remoting.client.RemotingClient",
        lambda addr, timeout, max_frame_bytes, on_request, credentials: _unreachable(
            lambda: RemotingClient(
                addr, timeout=timeout, max_frame_bytes=max_frame_bytes, on_request=on_request, credentials=credentials
            )
        ),
        addr=("addr", _UNREACHABLE[0]),
        timeout=("timeout", 0.5),
        max_frame_bytes=("count", MAX_FRAME_BYTES),
        on_request=("object?", None),
        credentials=("object?", None),
    ),
    E(
        "remoting.api.NameServer",
        lambda addrs, timeout, credentials: NameServer(addrs, timeout=timeout, credentials=credentials).close(),
        addrs=("namesrv", _UNREACHABLE[0]),
        timeout=("timeout", 0.5),
        credentials=("object?", AclCredentials("ak", "sk")),
    ),
    E(
        "remoting.api.NameServer.topic_list",
        lambda addrs: _unreachable(lambda: NameServer(addrs, timeout=0.5).topic_list()),
        addrs=("namesrv", _UNREACHABLE[0]),
    ),
    E(
        "remoting.api.BrokerClient",
        lambda addr, timeout, on_request, credentials: _unreachable(
            lambda: BrokerClient(addr, timeout=timeout, on_request=on_request, credentials=credentials)
        ),
        addr=("addr", _UNREACHABLE[0]),
        timeout=("timeout", 0.5),
        on_request=("object?", None),
        credentials=("object?", None),
    ),
    # fleet.live: a cluster behind a closed port (the read fails at once with RemotingConnectError)
    E(
        "fleet.rocketmq.live.read_cluster",
        lambda namesrv, timeout, workers, progress: _unreachable(
            lambda: live_mod.read_cluster(namesrv, timeout=timeout, workers=workers, progress=progress)
        ),
        namesrv=("namesrv", _UNREACHABLE[0]),
        timeout=("timeout", 0.5),
        workers=("count", 8),
        progress=("object?", None),
    ),
    E(
        "fleet.rocketmq.live.live_snapshot",
        lambda namesrv, timeout: _unreachable(lambda: live_mod.live_snapshot(namesrv, timeout=timeout)),
        namesrv=("namesrv", _UNREACHABLE[0]),
        timeout=("timeout", 0.5),
    ),
    # fleet: Kafka snapshots and their audit
    E(
        "fleet.kafka.snapshot.kafka_snapshot_from_dict",
        lambda data, source: kafka_snap_mod.kafka_snapshot_from_dict(data, source),
        data=("mapping", _KAFKA_SNAPSHOT),
        source=("str", "<s>"),
    ),
    E(
        "fleet.kafka.snapshot.load_kafka_snapshot",
        lambda path: kafka_snap_mod.load_kafka_snapshot(path),
        path=("str", str(_GOOD_KAFKA_SNAPSHOT_FILE)),
    ),
    E(
        "fleet.kafka.snapshot.snapshot_kind",
        lambda path: kafka_snap_mod.snapshot_kind(path),
        path=("str", str(_GOOD_KAFKA_SNAPSHOT_FILE)),
    ),
    E(
        "fleet.kafka.audit.audit_kafka",
        lambda snapshot, previous, what_if: kafka_audit_mod.audit_kafka(snapshot, previous, what_if),
        snapshot=("object", kafka_snap_mod.kafka_snapshot_from_dict(_KAFKA_SNAPSHOT)),
        previous=("object?", kafka_snap_mod.kafka_snapshot_from_dict(_KAFKA_SNAPSHOT)),
        what_if=("any", "range,sticky"),
    ),
    E(
        "fleet.kafka.audit.kafka_what_if_candidates",
        lambda option: kafka_audit_mod.kafka_what_if_candidates(option),
        option=("any", "range,uniform"),
    ),
    # history: a directory that is not a history, or of a newer version, is one HistoryError
    E(
        "history.writer.open_history",
        lambda root: history_writer_mod.open_history(root, create=False),
        root=("str", _HISTORY),
    ),
    E("history.writer.read_ticks", lambda root: history_writer_mod.read_ticks(root), root=("str", _HISTORY)),
    E("history.collector.load_state", lambda root: history_collector_mod.load_state(root), root=("str", _HISTORY)),
    E(
        "history.kafka_collector.load_kafka_state",
        lambda root: history_kafka_mod.load_kafka_state(root),
        root=("str", _HISTORY),
    ),
    E("history.schema.cluster_kind", lambda root: history_schema_mod.cluster_kind(root), root=("str", _HISTORY)),
    # rebalance
    E(
        "rebalance.RebalanceService",
        lambda created, wait, minimum: RebalanceService(
            created_ms=created, wait_interval_ms=wait, min_interval_ms=minimum
        ),
        created=("ms", 0),
        wait=("duration", 20_000),
        minimum=("duration?", 1000),
    ),
    E(
        "rebalance.PushConsumer",
        lambda cid, topics, heartbeat, persist, poll, pull, strategy: PushConsumer(
            cid,
            "cg",
            topics,
            strategy,
            _Transport(),
            lambda t: Q(),
            heartbeat_interval_ms=heartbeat,
            persist_interval_ms=persist,
            poll_name_server_interval_ms=poll,
            pull_delay_ms=pull,
        ),
        cid=("str", "c1"),
        topics=("strs", ["T"]),
        heartbeat=("duration", 30_000),
        persist=("duration", 5_000),
        poll=("duration", 30_000),
        pull=("duration?", 0),
        strategy=("strategy", "AVG"),  # a registry name or config, as GroupMember takes it (issue 24)
    ),
]

# rocketmq: members and their records (no server: a closed loopback port as the name server; the
# member is built and closed, never started, so no thread or socket exists)
_RECORDS_DIR = Path(tempfile.mkdtemp(prefix="mqbalance-bad-records-"))
_GOOD_ROW = {"e": "p", "q": "b/T/0", "a": 0, "b": 5, "n": 5}
_GOOD_RECORDS = _RECORDS_DIR / "m1.jsonl"
_GOOD_RECORDS.write_text(json.dumps(_GOOD_ROW) + "\n")
_TORN_RECORDS = _RECORDS_DIR / "torn.jsonl"  # a kill -9 mid-write: the torn last line is ignored
_TORN_RECORDS.write_text(json.dumps(_GOOD_ROW) + '\n{"e": "p", "q"')
#: record files wrong in one way each: each must be a typed error naming the file
_BAD_RECORD_FILES: dict[str, bytes] = {
    "latin1.jsonl": b'{"e": "\xe9"}\n',
    "notjson.jsonl": b'{e: p}\n{"e": "stop"}\n',
    "number.jsonl": b"5\n",
    "list.jsonl": b"[1, 2]\n",
    "deep.jsonl": b"[" * 100_000 + b"\n{}\n",
    "bigint.jsonl": b"9" * 5000 + b"\n{}\n",
}
for _name, _content in _BAD_RECORD_FILES.items():
    (_RECORDS_DIR / _name).write_bytes(_content)
(_RECORDS_DIR / "dir.jsonl").mkdir()
_BAD_RECORD_PATHS = [
    *(str(_RECORDS_DIR / n) for n in _BAD_RECORD_FILES),
    str(_RECORDS_DIR / "dir.jsonl"),
    str(_RECORDS_DIR / "missing.jsonl"),
    str(_RECORDS_DIR / "nul\x00.jsonl"),
    str(_RECORDS_DIR / "\ud800.jsonl"),
    str(_GOOD_RECORDS / "below-a-file.jsonl"),
]
KINDS |= {
    # record files of `mqbalance rocketmq-consume` (paths): unreadable or garbage content is refused
    "record_files": _tag(st.sampled_from(_BAD_RECORD_PATHS).map(lambda p: [str(_GOOD_RECORDS), p]), REFUSE)
    | _tag(st.sampled_from(_BAD_RECORD_PATHS).map(Path).map(lambda p: [p]), REFUSE)
    | _tag(st.sampled_from([[str(_GOOD_RECORDS)], [_TORN_RECORDS], [], (_GOOD_RECORDS, _TORN_RECORDS)]), MAY),
    # {member: [record, ...]} as load_records returns them
    "consume_records": _tag(
        st.sampled_from(
            [
                {"m": [{**_GOOD_ROW, "a": "0"}]},
                {"m": [{**_GOOD_ROW, "a": 0.0}]},
                {"m": [{**_GOOD_ROW, "b": math.nan}]},
                {"m": [{**_GOOD_ROW, "a": True}]},
                {"m": [{**_GOOD_ROW, "a": -1}]},
                {"m": [{**_GOOD_ROW, "a": 7, "b": 2}]},
                {"m": [{**_GOOD_ROW, "b": 2**70}]},
                {"m": [{**_GOOD_ROW, "q": 3}]},
                {"m": [{"e": "p"}]},
                {"m": [5]},
                {"m": [[1, 2]]},
                {"m": "rows"},
                {"m": {"e": "p"}},
                {"m": None},
                [_GOOD_ROW],
                "m",
            ]
        ),
        REFUSE,
    )
    | _tag(
        st.sampled_from(
            [
                {},
                {"m": []},
                {"m": [{"e": "stop"}, {"e": "a", "q": ["b/T/0"]}]},
                {"m": [{**_GOOD_ROW, "a": 0, "b": 2**62}]},  # a huge range: ranges, not offsets, are counted
                {"m": [_GOOD_ROW], "m2": [{**_GOOD_ROW, "a": 3, "b": 8}]},
            ]
        ),
        MAY,
    ),
}


def _member(**kw: Any) -> None:
    """A member built with ``kw`` (over good defaults), then closed without being started."""
    args: dict[str, Any] = {"namesrv": _UNREACHABLE[0], "group": "cg", "topics": ["T"], "client_id": "c1"}
    args |= kw
    RocketMQMember(args.pop("namesrv"), args.pop("group"), args.pop("topics"), **args).close()


TABLE += [
    E(
        "rocketmq.member.RocketMQMember",
        lambda namesrv, group, topics, consume, strategy, client_id, semantics, timeout: _member(
            namesrv=namesrv,
            group=group,
            topics=topics,
            consume=consume,
            strategy=strategy,
            client_id=client_id,
            semantics=semantics,
            timeout=timeout,
        ),
        namesrv=("namesrv", _UNREACHABLE[0]),
        group=("str", "cg"),
        topics=("strs", ["T", "U"]),
        consume=("object", lambda mq, messages: None),
        strategy=("strategy", "AVG"),
        client_id=("str?", "c1"),
        semantics=("str", "5.x"),
        timeout=("timeout", 0.5),
    ),
    E(
        "rocketmq.member.RocketMQMember(settings)",
        lambda strategy_params, consume_from_where, pull_batch_size: _member(
            consume=print,
            strategy="CONSISTENT_HASH",
            strategy_params=strategy_params,
            consume_from_where=consume_from_where,
            pull_batch_size=pull_batch_size,
        ),
        strategy_params=("mapping", {"virtualNodeCnt": 5}),
        consume_from_where=("object", ConsumeFromWhere.FIRST_OFFSET),
        pull_batch_size=("count", 32),
    ),
    E(
        "rocketmq.member.RocketMQMember(intervals)",
        lambda idle, heartbeat, persist, poll, wait, minimum, joining: _member(
            consume=print,
            idle_pull_ms=idle,
            heartbeat_interval_ms=heartbeat,
            persist_interval_ms=persist,
            poll_name_server_interval_ms=poll,
            rebalance_wait_interval_ms=wait,
            rebalance_min_interval_ms=minimum,
            joining_ms=joining,
        ),
        idle=("duration", 50),
        heartbeat=("duration", 30_000),
        persist=("duration", 5_000),
        poll=("duration", 30_000),
        wait=("duration", 20_000),
        minimum=("duration?", 1_000),
        joining=("duration?", None),
    ),
    E(
        "rocketmq.member.RocketMQMember(callbacks)",
        lambda assigned, revoked, commit, error, duplicate, notified, rebalanced: _member(
            consume=print,
            on_assigned=assigned,
            on_revoked=revoked,
            on_commit=commit,
            on_error=error,
            on_duplicate_id=duplicate,
            on_notified=notified,
            on_rebalanced=rebalanced,
        ),
        assigned=("object?", None),
        revoked=("object?", None),
        commit=("object?", None),
        error=("object?", None),
        duplicate=("object?", None),
        notified=("object?", None),
        rebalanced=("object?", None),
    ),
    E("rocketmq.member.default_client_id", rocketmq_mod.default_client_id),
    E(
        "rocketmq.transport.ClusterTransport",
        lambda namesrv, timeout, on_notify, on_error, on_commit, running_info, may_commit: ClusterTransport(
            namesrv,
            timeout=timeout,
            on_notify=on_notify,
            on_error=on_error,
            on_commit=on_commit,
            running_info=running_info,
            may_commit=may_commit,
        ).close(),
        namesrv=("namesrv", _UNREACHABLE[0]),
        timeout=("timeout", 0.5),
        on_notify=("object?", None),
        on_error=("object?", None),
        on_commit=("object?", None),
        running_info=("object?", None),
        may_commit=("object?", None),
    ),
    E("rocketmq.records.load_records", rocketmq_mod.load_records, paths=("strs", [str(_GOOD_RECORDS)])),
    E("rocketmq.records.load_records(content)", rocketmq_mod.load_records, paths=("record_files", [_GOOD_RECORDS])),
    E(
        "rocketmq.records.check_records",
        rocketmq_mod.check_records,
        records=("mapping", {"m1": [_GOOD_ROW]}),
        max_offsets=("partitions", {"b/T/0": 8, "b/T/1": 2}),
    ),
    E(
        "rocketmq.records.check_records(records)",
        lambda records: rocketmq_mod.check_records(records, {"b/T/0": 8}),
        records=("consume_records", {"m1": [_GOOD_ROW]}),
    ),
]


#: Public names not walked, each with the reason. Keys are ``module.name`` or ``module.*``.
EXEMPT: dict[str, str] = {
    "mqbalance.coordination.*": "needs a ZooKeeper server; config: InvalidCoordinationConfigError (test_coordination)",
    "mqbalance.fleet.spark.*": "starts Spark; its inputs are snapshots (walked), checked first by the CLI walker",
    "mqbalance.spark.*": "DataFrame functions (Spark jobs): bad columns and strategies refused on the driver, "
    "building blocks' strategies parsed by the registry (walked); tested in test_spark_functions",
    "mqbalance.fleet.shipping.*": "packs the Python environment for Spark executors; no user values",
    "mqbalance.fleet.rocketmq.assignment.*": "executors' side of assign_snapshot (walked), fed validated snapshots",
    "mqbalance.fleet.rocketmq.churn.*": "the engine's churn, fed the engine's own assignment tables",
    "mqbalance.fleet.kafka.messages.*": "Kafka protocol message classes (kafka-python's ApiMessage) the live snapshot "
    "sends and decodes; the broker's replies, not user values (snapshot --bootstrap: CLI walker)",
    "mqbalance.fleet.rocketmq.facts.*": "the engine's facts, fed validated snapshots and the engine's own tables",
    "mqbalance.fleet.rocketmq.what_if.what_if": "the engine's what-if, fed the engine's own tables; its candidates: "
    "what_if_candidates (walked)",
    "mqbalance.fleet.rocketmq.spark.*": "starts Spark; its inputs are snapshots (walked), checked first by the CLI "
    "walker",
    "mqbalance.fleet.kafka.audit.checked_audit_arguments": "audit_kafka's own argument checks (walked through it)",
    "mqbalance.fleet.audit_on_spark": "starts Spark; its arguments are audit's (walked), checked on the driver first",
    "mqbalance.fleet.assignments_on_spark": "starts Spark on a snapshot (walked by check_snapshots first)",
    "mqbalance.fleet.assignment_table": "formats an AuditResult the library built for its snapshot (walked)",
    "mqbalance.fleet.write_snapshot": "writes a live read the library validated; -o: the CLI walker",
    "mqbalance.fleet.read_summary": "formats a live read the library validated",
    "mqbalance.fleet.rocketmq.audit.assignment_table": "walked through mqbalance.fleet.assignment_table",
    "mqbalance.fleet.rocketmq.audit.describe": "walked through mqbalance.fleet.describe",
    "mqbalance.fleet.rocketmq.live.read_summary": "walked through mqbalance.fleet.read_summary",
    "mqbalance.fleet.kafka.audit.assignment_table": "walked through mqbalance.fleet.assignment_table",
    "mqbalance.fleet.kafka.audit.describe": "walked through mqbalance.fleet.describe",
    "mqbalance.fleet.kafka.snapshot.read_summary": "walked through mqbalance.fleet.read_summary",
    "mqbalance.fleet.report.*": "writes an AuditResult built by the library; output paths: CLI walker",
    "mqbalance.fleet.findings.*": "result types built by the library",
    "mqbalance.fleet.kafka.live.*": "reads a live Kafka cluster (test_kafka_fleet; the CLI walker); its bootstrap "
    "is checked by kafka.member.check_bootstrap",
    "mqbalance.fleet.kafka.spark.audit_kafka_on_spark": "starts Spark; its arguments are audit_kafka's (walked), "
    "checked on the driver by the same function (test_kafka_fleet_spark)",
    "mqbalance.history.analysis.*": "pure functions over a group's rows, called by the job on the dataset it read "
    "(test_history, with Burrow's cases)",
    "mqbalance.history.kafka.*": "pure functions over a Kafka group's rows, called by the job on the dataset it read "
    "(test_history_kafka)",
    "mqbalance.history.job.analyse": "starts Spark; its directory is checked by open_history (walked), the CLI walker",
    "mqbalance.history.spans.HistoryResult": "result type of analyse",
    "mqbalance.history.report.write_history_outputs": "writes a HistoryResult built by the library; paths: CLI walker",
    "mqbalance.history.metrics.WatchMetrics": "the watcher's metrics registry, fed by the collector (test_watch)",
    "mqbalance.history.collector.Collector": "reads a live RocketMQ cluster every tick (test_watch; the CLI walker)",
    "mqbalance.history.collector.FleetState": "the collector's state, built by it",
    "mqbalance.history.collector.TickResult": "result type of Collector.tick",
    "mqbalance.history.collector.diff": "compares two FleetStates the collector built",
    "mqbalance.history.writer.HistoryWriter": "the collector's writer; its directory: open_history (walked)",
    "mqbalance.history.kafka_collector.KafkaCollector": "reads a live Kafka cluster every tick "
    "(test_kafka_watch_live; the CLI walker)",
    "mqbalance.history.kafka_collector.KafkaState": "the Kafka collector's state, built by it",
    "mqbalance.history.kafka_collector.GroupView": "part of KafkaState, built by the collector",
    "mqbalance.history.kafka_collector.MemberView": "part of KafkaState, built by the collector",
    "mqbalance.history.kafka_collector.kafka_diff": "compares two KafkaStates the collector built",
    "mqbalance.history.kafka_collector.client_settings": "the collector's kafka-python settings: its own over the "
    "security settings the CLI read",
    "mqbalance.history.kafka_collector.described_generation": "pairs a state the broker described with records "
    "the group log decoded (test_history_kafka_steps)",
    "mqbalance.history.kafka_collector.confirmed_gone": "reads the coordinator's own answers to a describe "
    "(doctest; live in test_bench_kafka_watch_fleet)",
    "mqbalance.history.ticking.*": "the tick loop both collectors share (test_watch, test_kafka_watch_live); "
    "replay is walked through load_state and load_kafka_state",
    "mqbalance.fleet.kafka.group_log.*": "follows and decodes the broker's records in __consumer_offsets, not user "
    "values (test_kafka_watch_live)",
    "mqbalance.fleet.kafka.wire.*": "decodes the broker's answers, not user values; truncated, garbled and random "
    "bytes raise KafkaWireError (test_kafka_wire), the broker's own answers in test_bench_kafka_watch_fleet",
    "mqbalance.fleet.kafka.snapshot.KafkaSnapshot": "result type of kafka_snapshot_from_dict (walked)",
    "mqbalance.fleet.kafka.snapshot.KafkaGroup": "result type of kafka_snapshot_from_dict (walked)",
    "mqbalance.fleet.kafka.snapshot.KafkaMember": "result type of kafka_snapshot_from_dict (walked)",
    "mqbalance.audit.*": "re-exports of mqbalance.fleet",
    "mqbalance.snapshot.*": "re-exports of mqbalance.fleet.rocketmq.snapshot (walked)",
    "mqbalance.examples.fault_seed.*": "the demo behind `mqbalance fault-latency-demo` (CLI walker)",
    "mqbalance.cli.*": "the CLI: walked by test_cli_refuses_bad_input",
    "mqbalance.progress.*": "progress lines, no user values",
    "mqbalance.sim.plot.*": "plots a SimulationResult built by the library",
    "mqbalance.sim.metrics.*": "result types built by the simulator",
    "mqbalance.sim.coverage.*": "result type built by the simulator",
    "mqbalance.sim.model.*": "scenario dataclasses built by scenario_from_dict / load_scenario (walked)",
    "mqbalance.kafka.kafka_python.*": "kafka-python's assignor interface over its objects (test_kafka_python_dropin)",
    "mqbalance.rebalance.broker.*": "broker-side state driven by the simulator and tests, not user input",
    "mqbalance.rebalance.memory.*": "in-memory broker of the simulator",
    "mqbalance.rebalance.client.*": "RebalanceImpl is driven by PushConsumer (walked); topics: a sequence of str",
    "mqbalance.fault.FaultItem": "result type",
    "mqbalance.fault.SendSimulation": "result type",
    "mqbalance.kafka.TopicPartition": "a plain NamedTuple, like kafka-python's; checked where used (pairs)",
    "mqbalance.kafka.ColumnarAssignment": "result type",
    "mqbalance.kafka.TopicPartitionList": "result type built by the binding (test_kafka_topic_partition_list)",
    "mqbalance.kafka.AssignmentReport": "result type",
    "mqbalance.allocation.registry.StrategyInfo": "registry metadata",
    "mqbalance.kafka.what_if_names": "takes no input: the names of the core's two lists",
    "mqbalance.allocation.registry.Family": "an enum",
    "mqbalance.allocation.registry.Use": "an enum; checked where given (names_for, StrategySpec.parse: walked)",
    "mqbalance.allocation.registry.StrategyName": "an enum of names; parsing is walked through strategy()/lookup()",
    "mqbalance.StrategyName": "an enum of names; parsing is walked through strategy()/lookup()",
    "mqbalance.allocation.rooms.RoomResolver": "a protocol (abstract)",
    "mqbalance.RoomResolver": "a protocol (abstract)",
    "mqbalance.sim.SimulationResult": "result type",
    "mqbalance.sim.MetricsRecorder": "result type",
    "mqbalance.sim.Scenario": "built by scenario_from_dict (walked)",
    "mqbalance.sim.Join": "scenario event dataclass built by scenario_from_dict (walked)",
    "mqbalance.sim.Leave": "scenario event dataclass built by scenario_from_dict (walked)",
    "mqbalance.sim.Crash": "scenario event dataclass built by scenario_from_dict (walked)",
    "mqbalance.sim.QueueCountChange": "scenario event dataclass built by scenario_from_dict (walked)",
    "mqbalance.sim.NetworkChange": "scenario event dataclass built by scenario_from_dict (walked)",
    "mqbalance.sim.NotificationSwitch": "scenario event dataclass built by scenario_from_dict (walked)",
    "mqbalance.sim.Partition": "scenario event dataclass built by scenario_from_dict (walked)",
    "mqbalance.sim.bundled_scenarios": "no parameters",
    "mqbalance.sim.scenario.*": "walked through mqbalance.sim (same objects)",
    "mqbalance.sim.engine.*": "walked through mqbalance.sim",
    "mqbalance.fleet.rocketmq.snapshot.*": "walked through mqbalance.fleet (same objects)",
    "mqbalance.fleet.rocketmq.example.*": "walked through mqbalance.fleet (same objects)",
    "mqbalance.fleet.Connection": "snapshot row types built by the loader (walked)",
    "mqbalance.fleet.ConsumerGroup": "snapshot row types built by the loader (walked)",
    "mqbalance.fleet.MessageModel": "an enum, parsed by the loader (walked)",
    "mqbalance.fleet.Snapshot": "built by the loaders (walked)",
    "mqbalance.fleet.AuditResult": "result type",
    "mqbalance.fleet.Finding": "result type",
    "mqbalance.fleet.FindingKind": "an enum",
    "mqbalance.fleet.PairRow": "result type",
    "mqbalance.fleet.WhatIfRow": "result type",
    "mqbalance.sim.coordinator.GroupCoordinator": "the whole-group party of a simulation (walked via sim)",
    "mqbalance.fleet.summarise": "builds an AuditResult from the engine's own tables",
    "mqbalance.fleet.write_outputs": "writes an AuditResult built by the library; --out: CLI walker",
    "mqbalance.fleet.write_parquet": "writes a Snapshot built by the loaders",
    "mqbalance.rebalance.ClientChannelInfo": "broker-side state driven by the simulator",
    "mqbalance.rebalance.ConsumerGroupEvent": "an enum",
    "mqbalance.rebalance.ConsumerGroupInfo": "broker-side state driven by the simulator",
    "mqbalance.rebalance.ConsumerManager": "broker-side state driven by the simulator",
    "mqbalance.rebalance.Event": "broker-side event record",
    "mqbalance.rebalance.SubscriptionData": "broker-side record",
    "mqbalance.rebalance.Broker": "a protocol",
    "mqbalance.rebalance.Transport": "a protocol",
    "mqbalance.rebalance.ConsumeFromWhere": "an enum",
    "mqbalance.rebalance.ConsumerState": "an enum",
    "mqbalance.rebalance.OffsetStore": "client-side state driven by RebalanceImpl",
    "mqbalance.rebalance.ProcessQueue": "client-side state driven by RebalanceImpl",
    "mqbalance.rebalance.PullRequest": "client-side record",
    "mqbalance.rebalance.RebalanceImpl": "driven by PushConsumer (walked)",
    "mqbalance.rebalance.InMemoryBroker": "in-memory broker of the simulator",
    "mqbalance.rebalance.consumer.*": "walked through mqbalance.rebalance (same objects)",
    "mqbalance.rebalance.service.*": "walked through mqbalance.rebalance (same objects)",
    "mqbalance.allocation.bulk": "a module (its functions are walked)",
    "mqbalance.StrategySpec": "walked as registry.StrategySpec.parse",
    "mqbalance.remoting.client.RequestHandler": "a callable type alias; on_request is walked with RemotingClient",
    "mqbalance.remoting.RequestHandler": "a callable type alias; on_request is walked with RemotingClient",
}
for _module in ("mqbalance.remoting", "mqbalance.remoting.api", "mqbalance.remoting.codes"):
    for _name, _reason in {
        "BrokerData": "record decoded from a name server's answer",
        "ClientConnection": "record decoded from a broker's answer",
        "ClusterInfo": "record decoded from a name server's answer",
        "ConsumerConnectionInfo": "record decoded from a broker's answer",
        "ConsumerData": "a heartbeat's record, sent by BrokerClient.heartbeat (needs a broker: test_remoting)",
        "Message": "record decoded by decode_messages (walked)",
        "PullResult": "result type of BrokerClient.pull",
        "PullStatus": "an enum",
        "QueueData": "record decoded from a name server's answer",
        "SendResult": "result type of BrokerClient.send",
        "TopicRoute": "record decoded from a name server's answer",
        "RequestCode": "an enum of the protocol's codes",
        "ResponseCode": "an enum of the protocol's codes",
    }.items():
        EXEMPT[f"{_module}.{_name}"] = _reason

EXEMPT |= {
    "mqbalance.rebalance.ClientIdListing": "an enum; parsed by ConsumerManager (broker-side, driven by the simulator)",
    "mqbalance.rocketmq.worker.*": "the runnable behind `mqbalance rocketmq-consume` (CLI walker): settings = the "
    "member's",
    "mqbalance.kafka.member.*": "the runnable behind `mqbalance kafka-consume` (CLI walker; test_kafka_live_bad_input)",
    "mqbalance.kafka.client_config.read_properties": "reads a file (--command-config: CLI walker; "
    "test_kafka_client_config); its text goes to parse_properties (walked)",
    "mqbalance.kafka.client_config.load_client_config": "read_properties then client_config_from_properties "
    "(walked; --command-config: CLI walker)",
    "mqbalance.kafka.client_config.Secret": "a str subclass: any str is a secret",
    "mqbalance.kafka.client_errors.*": "maps kafka-python's connection failures on a live broker "
    "(test_java_kafka_secured)",
    "mqbalance.member_process.*": "the life cycle behind the three member commands (CLI walker), fed their configs",
    "mqbalance.signal_actions.*": "the member commands' and watch's signal handling, fed their own signal "
    "table (test_signal_actions, test_member_process)",
    "mqbalance.rocketmq.records.ownership_intervals": "analysis of records already checked by check_records (walked)",
    "mqbalance.record_files.held_queues": "replays rows that load_records returned (walked); a malformed row is "
    "refused by name (its doctest)",
    "mqbalance.rocketmq.records.window_figures": "analysis of ownership_intervals' result (library-built)",
    "mqbalance.rocketmq.records.duplicates_between": "analysis of records already checked by check_records (walked)",
}
for _module in ("mqbalance.rocketmq", "mqbalance.rocketmq.member", "mqbalance.rocketmq.transport"):
    for _name, _reason in {
        "MemberState": "an enum",
        "MemberStats": "result type (counters of a running member)",
        "DuplicateClientId": "record built by the member from the broker's lists (test_rocketmq_member_hazards)",
        "PulledMessage": "record decoded by decode_messages (walked)",
    }.items():
        EXEMPT[f"{_module}.{_name}"] = _reason
for _module in ("mqbalance.rocketmq", "mqbalance.rocketmq.records"):
    EXEMPT[f"{_module}.RecordCheck"] = "result type of check_records (walked)"

EXEMPT |= {
    "mqbalance.fleet.kafka.lag_time.*": "reads the record times of partitions a live snapshot read from the broker "
    "(snapshot --bootstrap: CLI walker; test_java_kafka_lag_time)",
    "mqbalance.fleet.rocketmq.lag_time.*": "reads the store times of queues a live read found (snapshot --namesrv, "
    "watch: CLI walker; test_lag_time_live)",
    "mqbalance.fleet.rocketmq.live.ClusterReader": "the reader behind read_cluster and watch (CLI walker); its name "
    "server list parsed as NameServer's (walked)",
    "mqbalance.remoting.api.TopicConfigs": "record decoded from a broker's answer",
    "mqbalance.history.causes.*": "analysis of a history's rows, which the writer checked (history: CLI walker)",
    "mqbalance.history.drain.*": "analysis of the offsets readings the watcher wrote (library-built)",
    "mqbalance.fleet.drain.*": "analysis of the offsets readings of checked snapshots (fleet.drains, fleet.audit: "
    "walked)",
    "mqbalance.history.job.data_bytes": "opens the history as analyse does (history: CLI walker)",
    "mqbalance.scaling.advise": "walked through `mqbalance scale` (CLI walker: every option's bad values)",
    "mqbalance.scaling.measured_load": "walked through `mqbalance scale --history` (CLI walker)",
    "mqbalance.scaling.GroupLoad": "a record of advise's inputs, checked by advise",
    "mqbalance.scaling.ScaleStep": "result type of advise",
    "mqbalance.scaling.ScalingAdvice": "result type of advise",
}

#: ``module.name`` of each public object → the TABLE entries that walk it.
ALIASES = {
    "mqbalance.MessageQueue": "allocation.models.MessageQueue",
    "mqbalance.java_string_key": "allocation.models.java_string_key",
    "mqbalance.sort_client_ids": "allocation.ordering.sort_client_ids",
    "mqbalance.sort_queues": "allocation.ordering.sort_queues",
    "mqbalance.strategy": "allocation.registry.strategy",
    "mqbalance.AllocateStrategy": "allocation.strategies.AllocateStrategy.allocate",
    "mqbalance.PrefixRoomResolver": "allocation.rooms.PrefixRoomResolver",
    "mqbalance.allocation.registry.strategy": "allocation.registry.strategy",
    "mqbalance.allocation.registry.StrategySpec": "allocation.registry.StrategySpec.parse",
    "mqbalance.allocation.strategies.AllocateStrategy": "allocation.strategies.AllocateStrategy.allocate",
    "mqbalance.kafka.Assignor": "kafka.Assignor.assign",
    "mqbalance.versions.Semantics": "versions.Semantics",
    "mqbalance.fault.MQFaultStrategy": "fault.MQFaultStrategy",
    "mqbalance.sim.simulate": "sim.simulate",
    "mqbalance.fleet.load_snapshot": "fleet.load_snapshot",
    "mqbalance.fleet.snapshot_from_dict": "fleet.snapshot_from_dict",
    "mqbalance.fleet.what_if_candidates": "fleet.what_if_candidates",
    "mqbalance.fleet.audit_snapshot": "fleet.audit_snapshot",
    "mqbalance.sim.load_scenario": "sim.load_scenario",
    "mqbalance.sim.scenario_from_dict": "sim.scenario_from_dict",
    "mqbalance.sim.Simulation": "sim.Simulation",
    "mqbalance.sim.compare": "sim.compare",
    "mqbalance.rebalance.PushConsumer": "rebalance.PushConsumer",
    "mqbalance.rebalance.RebalanceService": "rebalance.RebalanceService",
}
for _name, _entry in {
    "AclCredentials": "remoting.client.AclCredentials",
    "RemotingClient": "remoting.client.RemotingClient",
    "RemotingCommand": "remoting.frame.RemotingCommand.decode",
    "BrokerClient": "remoting.api.BrokerClient",
    "NameServer": "remoting.api.NameServer",
    "strategy_from_running_info": "remoting.api.strategy_from_running_info",
    "running_info_queues": "remoting.api.running_info_queues",
}.items():
    ALIASES[f"mqbalance.remoting.{_name}"] = _entry
for _name, _entry in {
    "RocketMQMember": "rocketmq.member.RocketMQMember",
    "default_client_id": "rocketmq.member.default_client_id",
    "ClusterTransport": "rocketmq.transport.ClusterTransport",
    "load_records": "rocketmq.records.load_records",
    "check_records": "rocketmq.records.check_records",
}.items():
    ALIASES[f"mqbalance.rocketmq.{_name}"] = _entry
for _name in ("MessageQueue", "java_string_key", "sort_client_ids", "sort_queues", "strategy", "AllocateStrategy"):
    ALIASES[f"mqbalance.allocation.{_name}"] = ALIASES[f"mqbalance.{_name}"]
ALIASES["mqbalance.allocation.PrefixRoomResolver"] = ALIASES["mqbalance.PrefixRoomResolver"]
ALIASES["mqbalance.allocation.StrategySpec"] = "allocation.registry.StrategySpec.parse"
ALIASES["mqbalance.record_files.load_records"] = "rocketmq.records.load_records"  # the same function
for _cls in strategies.__all__:  # each strategy class, re-exported by mqbalance.allocation and mqbalance
    if _cls != "AllocateStrategy":
        for _module in ("mqbalance", "mqbalance.allocation", "mqbalance.allocation.strategies"):
            ALIASES[f"{_module}.{_cls}"] = f"allocation.strategies.{_cls}"


def _walked_names() -> set[str]:
    return {e.name.split("(")[0] for e in TABLE}


def _public_names() -> list[str]:
    """``module.name`` of every public callable or class in ``__all__`` of mqbalance and its public
    submodules (exception classes and plain constants excluded: they take no input)."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the deprecated re-export modules
        modules = [mqbalance] + [
            importlib.import_module(m.name)
            for m in pkgutil.walk_packages(mqbalance.__path__, "mqbalance.")
            if not any(part.startswith("_") for part in m.name.split(".")[1:])
        ]
    for mod in modules:
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if isinstance(obj, type) and issubclass(obj, (BaseException, Warning)):
                continue
            if not callable(obj) and not isinstance(obj, type(mqbalance)):
                continue
            out.append(f"{mod.__name__}.{name}")
    return out


def _covered(qualified: str) -> bool:
    module, _, name = qualified.rpartition(".")
    short = qualified.removeprefix("mqbalance.")
    walked = _walked_names()
    prefixes = [p for p in walked if p == short or p.startswith(short + ".")]
    return bool(
        prefixes
        or ALIASES.get(qualified) in walked
        or qualified in EXEMPT
        or any(
            module == k.removesuffix(".*") or module.startswith(k.removesuffix("*")) for k in EXEMPT if k.endswith(".*")
        )
    )


def _object(qualified: str) -> Any:
    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_public_name_is_walked() -> None:
    """A public function that is neither walked nor exempt (with a reason) fails here: add it to
    TABLE (or, if it takes no user input, to EXEMPT). A name re-exported by a package (``mqbalance``,
    ``mqbalance.allocation``, ``mqbalance.kafka``, ...) is covered where the same object is."""
    names = _public_names()
    spellings: dict[int, list[str]] = {}
    for n in names:
        spellings.setdefault(id(_object(n)), []).append(n)
    missing = [n for n in names if not any(_covered(m) for m in spellings[id(_object(n))])]
    assert not missing, f"public names not covered by the bad-input walker: {missing}"


def test_every_table_entry_runs_with_its_good_values() -> None:
    """The baseline calls are valid: a failure of a bad value is then due to that value."""
    for entry in TABLE:
        _call(entry, {})


# ---- running a call -----------------------------------------------------------------------------


def _call(entry: Entry, override: dict[str, Any]) -> Any:
    values = {k: good for k, (_, good) in entry.params.items()}
    values.update(override)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("error", PreviousAssignmentWarning)
        return entry.call(**values)


def _names_value(value: Any) -> bool:
    """Scalars a message can quote (the message of a refused one must show it as passed)."""
    if isinstance(value, bool) or value is None:
        return False
    return isinstance(value, (int, float, str)) and len(repr(value)) <= 40


def _verdict(entry: Entry, param: str, value: Any, must_refuse: bool) -> str | None:
    """None if the outcome is acceptable, else what went wrong."""
    try:
        _call(entry, {param: value})
    except MQBalanceError as e:
        if not str(e).strip():
            return f"{entry.name}({param}={value!r}) raised {type(e).__name__} with an empty message"
        if must_refuse and _names_value(value) and not any(v in str(e) for v in (repr(value), str(value))):
            return f"{entry.name}({param}={value!r}): the message does not name the value: {e}"
        return None
    except PreviousAssignmentWarning:
        return None
    except Exception as e:  # anything else is a bare error escaping the library
        return f"{entry.name}({param}={value!r}) raised a bare {type(e).__name__}: {e}"
    if must_refuse:
        return f"{entry.name}({param}={value!r}) was accepted; it must be refused"
    return None


_PARAMS = [(e, p) for e in TABLE for p in e.params]


@pytest.mark.parametrize(("entry", "param"), _PARAMS, ids=[f"{e.name}:{p}" for e, p in _PARAMS])
def test_bad_values_are_refused_with_a_typed_error(entry: Entry, param: str) -> None:
    kind = entry.params[param][0]

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)
    @given(KINDS[kind])
    def check(case: tuple[Any, bool]) -> None:
        value, must_refuse = case
        problem = _verdict(entry, param, value, must_refuse)
        assert problem is None, problem

    check()


# ---- risky values in a capped subprocess --------------------------------------------------------

_RISKY_CASES = [(e, p) for e in TABLE for p, (kind, _) in e.params.items() if kind in RISKY]
_CAP_BYTES = 3 << 30


def _child(name: str, param: str) -> None:  # runs in a child of the fork server
    entry = next(e for e in TABLE if e.name == name)
    problems = []
    for value in RISKY[entry.params[param][0]]:
        problem = _verdict(entry, param, value, must_refuse=False)
        if problem:
            problems.append(problem)
    print(json.dumps(problems))


#: the CPU seconds a huge value may cost before it counts as a hang
CHILD_CPU_S = 60

#: The fork server: imports this module once, then forks one child per request (a line of JSON,
#: ``[name, param, output path]``). The child caps its address space and CPU time, sends its stdout
#: and stderr to ``<output>`` and ``<output>.err`` and runs :func:`_child`. The server answers with
#: two lines: the child's pid, then its exit code (``-N``: killed by signal N). A fresh interpreter per
#: case imported this module again each time (~1.7 CPU s, 28 times).
_FORK_SERVER = """
import json, os, resource, sys, traceback
sys.path[:0] = [{tests!r}, {support!r}]
import test_bad_input
for line in sys.stdin:
    name, param, out = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            for fd, path in ((1, out), (2, out + ".err")):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
            resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
            resource.setrlimit(resource.RLIMIT_CPU, ({cpu}, {cpu} + 1))
            test_bad_input._child(name, param)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    print(pid, flush=True)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


@dataclass
class ForkServer:
    """A running :data:`_FORK_SERVER` and where its own errors go."""

    process: subprocess.Popen[str]
    errors: Path

    def run(self, name: str, param: str, out: Path, timeout: float) -> int | None:
        """The exit code of one capped child, or ``None`` (the child killed) past ``timeout`` s."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps([name, param, str(out)]) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise AssertionError(f"the fork server stopped: {self.errors.read_text()[-2000:]}") from None
        pid = self._number(self._line())  # at once: the child has just been forked
        line: list[str] = []
        waiting = threading.Thread(target=lambda: line.append(self._line()))
        waiting.start()
        waiting.join(timeout)
        if waiting.is_alive():
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.kill(pid, signal.SIGKILL)
            waiting.join()
            return None
        return self._number(line[0])

    def _line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline()

    def _number(self, line: str) -> int:
        if not line.strip():
            raise AssertionError(f"the fork server stopped: {self.errors.read_text()[-2000:]}")
        return int(line)


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    errors = tmp_path_factory.mktemp("fork-server") / "stderr"
    here = Path(__file__).parent
    code = _FORK_SERVER.format(tests=str(here), support=str(here / "support"), cap=_CAP_BYTES, cpu=CHILD_CPU_S)
    with errors.open("w") as err:
        process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=err, text=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})  # fmt: skip
    try:
        yield ForkServer(process, errors)
    finally:
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # the server died: its test failed and said so
            process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        assert process.stdout is not None
        process.stdout.close()


@pytest.mark.parametrize(("entry", "param"), _RISKY_CASES, ids=[f"{e.name}:{p}" for e, p in _RISKY_CASES])
def test_huge_values_fail_fast_in_a_capped_process(
    entry: Entry, param: str, fork_server: ForkServer, tmp_path: Path
) -> None:
    """Huge counts: a typed error naming the value (or the result), under a 3 GiB address-space
    cap within 60 s of CPU — never a panic, an abort, a MemoryError or a hang. The limit is the
    child's CPU time (a kernel limit, SIGXCPU past it): on a busy machine its wall time says nothing;
    a child blocked without using CPU is caught by the wall-clock timeout."""
    out = tmp_path / "out"
    code = fork_server.run(entry.name, param, out, timeout=600)
    if code is None:
        pytest.fail(f"{entry.name}({param}=huge) hung: not finished after 600 s")
    stderr = Path(f"{out}.err").read_text()
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        pytest.fail(f"{entry.name}({param}=huge) used more than {CHILD_CPU_S} s of CPU")
    assert code == 0, f"{entry.name}({param}=huge) died: rc={code}\n{stderr[-2000:]}"
    assert "PanicException" not in stderr
    problems = json.loads(out.read_text().strip().splitlines()[-1])
    assert not problems, problems


# ---- the same value gets the same verdict on every path -----------------------------------------


@pytest.mark.parametrize("vnodes", [3, 2.5, -1, True, "3", 2**31, None])
def test_same_verdict_for_virtual_node_cnt_on_every_path(vnodes: Any, tmp_path: Path) -> None:
    """API, JSON snapshot, Parquet snapshot, YAML scenario: a value is refused everywhere or nowhere."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import yaml

    def refused(f: Callable[[], Any]) -> bool:
        try:
            f()
        except MQBalanceError:
            return True
        return False

    spec = {"name": "CONSISTENT_HASH", "virtualNodeCnt": vnodes}
    api = refused(lambda: ConsistentHash(vnodes).assign(Q(), ["a"]))
    data = json.loads(json.dumps(_SNAPSHOT))
    data["groups"]["g"]["strategy"] = spec
    as_json = refused(lambda: from_json.snapshot_from_dict(data))
    good = from_json.snapshot_from_dict(
        {**_SNAPSHOT, "groups": {"g": {**_SNAPSHOT["groups"]["g"], "strategy": "CONSISTENT_HASH"}}}
    )
    snapshot_files.write_parquet(good, tmp_path / "p")
    conns = pq.read_table(tmp_path / "p" / "connections.parquet")
    i = conns.column_names.index("virtual_node_cnt")
    if vnodes is not None:
        column = pa.array([vnodes] * conns.num_rows)
        pq.write_table(conns.set_column(i, "virtual_node_cnt", column), tmp_path / "p" / "connections.parquet")
    as_parquet = refused(lambda: snapshot_files.load_snapshot(tmp_path / "p"))
    scenario = {
        **_SCENARIO,
        "group": {"consumers": 2, "strategy": {"name": "CONSISTENT_HASH", "virtual_node_cnt": vnodes}},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario))
    as_yaml = refused(lambda: sim_mod.load_scenario(tmp_path / "s.yaml"))
    if vnodes is None:  # "no value": the default everywhere
        assert not any((as_json, as_parquet, as_yaml))
        return
    assert api == as_json == as_parquet == as_yaml, {
        "api": api,
        "json": as_json,
        "parquet": as_parquet,
        "yaml": as_yaml,
    }
    assert (
        api == (not (isinstance(vnodes, int) and not isinstance(vnodes, bool) and 0 <= vnodes < 2**24)) or vnodes == -1
    )


# ---- the CLI ------------------------------------------------------------------------------------


def _cli(argv: list[str]) -> tuple[int, str]:
    from mqbalance.cli import main

    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse: usage + one error line, exit 2
            code = int(e.code or 0)
    return code, err.getvalue()


def _bad_files(root: Path) -> dict[str, Path]:
    """Snapshot and scenario files that are wrong in one way each."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files: dict[str, Path] = {}

    def put(name: str, content: bytes | str) -> None:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        files[name] = p

    put("latin1.json", b'{"topics": "\xe9t\xe9"}')
    put("notjson.json", "{topics: 1")
    put("deep.json", "[" * 100_000)
    put("bigint.json", '{"topics": ' + "9" * 5000 + "}")
    for name, change in {
        "addrs.json": lambda d: d["topics"]["T"].update(brokerDatas=[{"brokerName": "b", "brokerAddrs": {"x": 1}}]),
        "addrs2.json": lambda d: d["topics"]["T"].update(
            brokerDatas=[{"brokerName": "b", "brokerAddrs": [["0", "a"]]}]
        ),
        "nested.json": lambda d: d["topics"]["T"].update(queueDatas=[[1, 2]]),
        "huge.json": lambda d: d["topics"]["T"]["queueDatas"][0].update(readQueueNums=10**9),
        "beyondint.json": lambda d: d["topics"]["T"]["queueDatas"][0].update(readQueueNums=2**40),
        "float.json": lambda d: d["topics"]["T"]["queueDatas"][0].update(readQueueNums=2.5),
        "negative.json": lambda d: d["topics"]["T"]["queueDatas"][0].update(readQueueNums=-3),
        "version.json": lambda d: d["groups"]["g"]["connections"][0].update(version=2**70),
        "subs.json": lambda d: d["groups"]["g"].update(subscriptions="T"),
        "conns.json": lambda d: d["groups"]["g"].update(connections=[["c1"]]),
        "vnodes.json": lambda d: d["groups"]["g"].update(strategy={"name": "CONSISTENT_HASH", "virtualNodeCnt": 2.5}),
    }.items():
        data = json.loads(json.dumps(_SNAPSHOT))
        change(data)
        put(name, json.dumps(data))
    (root / "textparquet").mkdir()
    for table in ("queue_data", "connections", "subscriptions"):
        put(f"textparquet/{table}.parquet", "not parquet at all")
    good = from_json.snapshot_from_dict(_SNAPSHOT)
    for name, (table, column, values) in {
        "nullsub": ("subscriptions", "group", pa.array([None], pa.string())),
        "nullqd": ("queue_data", "broker_name", pa.array([None], pa.string())),
        "nullcount": ("queue_data", "read_queue_nums", pa.array([None], pa.int64())),
        "floatvn": ("connections", "virtual_node_cnt", pa.array([2.5, 2.5])),
        "hugeqd": ("queue_data", "read_queue_nums", pa.array([10**9])),
    }.items():
        d = snapshot_files.write_parquet(good, root / name)
        t = pq.read_table(d / f"{table}.parquet")
        t = t.set_column(t.column_names.index(column), column, values)
        pq.write_table(t, d / f"{table}.parquet")
        if name == "floatvn":  # a CONSISTENT_HASH fleet, with the count as a float
            t = t.set_column(t.column_names.index("strategy"), "strategy", pa.array(["CONSISTENT_HASH"] * 2))
            pq.write_table(t, d / f"{table}.parquet")
        files[name] = d
    scenario = "topics: {T: {queues_per_broker: 2}}\ngroup: {consumers: 2}\n"
    put("latin1.yaml", b"topics: \xe9\n")
    put("surrogate.yaml", 'topics: {"\\ud800": {queues_per_broker: 2}}\ngroup: {consumers: 2}\nduration: 1m\n')
    put("surrogate.json", json.dumps(_SNAPSHOT).replace('"c1"', '"\\ud800"'))
    put("bad.yaml", "topics: [\n")
    put("samples.yaml", scenario + "duration: 240h\nsample_interval: 1ms\n")
    put("timers.yaml", scenario + "duration: 240h\nclient: {heartbeat_interval: 1ms}\n")
    put(
        "ring.yaml",
        "topics: {T: {queues_per_broker: 2}}\nduration: 1m\n"
        "group: {consumers: 2, strategy: {name: CONSISTENT_HASH, virtual_node_cnt: 20000000}}\n",
    )
    put("negative.yaml", scenario.replace("2}", "-2}") + "duration: 1m\n")
    put("nan.yaml", scenario + "duration: .nan\n")
    put("good.yaml", scenario + "duration: 1m\n")
    (root / "dir.yaml").mkdir()
    files["dir.yaml"] = root / "dir.yaml"
    return files


#: CLI subcommand → argv lists that must each be refused (exit 2, one line naming what is wrong).
#: ``{name}`` is a bad file from :func:`_bad_files`; ``{unwritable}`` a path that cannot be created.
CLI: dict[str, list[list[str]]] = {
    "assign": [
        ["assign", f"{{{n}}}"]
        for n in (
            "latin1.json",
            "notjson.json",
            "deep.json",
            "bigint.json",
            "addrs.json",
            "addrs2.json",
            "nested.json",
            "huge.json",
            "beyondint.json",
            "float.json",
            "negative.json",
            "version.json",
            "subs.json",
            "conns.json",
            "vnodes.json",
            "surrogate.json",
            "textparquet",
            "nullsub",
            "nullqd",
            "nullcount",
            "floatvn",
            "hugeqd",
        )
    ]
    + [["assign", "/nonexistent/x.json"], ["assign", "--top", "-1"], ["assign", "--top", "x"]],
    "audit": [
        ["audit", "{huge.json}", "--out", "{tmp}/a"],
        ["audit", "{latin1.json}", "--out", "{tmp}/a"],
        ["audit", "--out", "{unwritable}"],
        ["audit", "--fail-on", "nonsense", "--out", "{tmp}/a"],
        ["audit", "{textparquet}", "--out", "{tmp}/a"],
        ["audit", "--lag-time-budget", "-1", "--out", "{tmp}/a"],
        ["audit", "--lag-time-budget", "x", "--out", "{tmp}/a"],
    ],
    "simulate": [
        ["simulate", f"{{{n}}}", "--out", "{tmp}/s"]
        for n in (
            "latin1.yaml",
            "bad.yaml",
            "samples.yaml",
            "timers.yaml",
            "ring.yaml",
            "negative.yaml",
            "nan.yaml",
            "surrogate.yaml",
            "dir.yaml",
        )
    ]
    + [
        ["simulate", "{good.yaml}", "--strategy", "CONFIG", "--out", "{tmp}/s"],
        ["simulate", "{good.yaml}", "--strategy", "NOPE", "--out", "{tmp}/s"],
        ["simulate", "{good.yaml}", "--out", "{unwritable}"],
        ["simulate", "{good.yaml}", "--seed", "1.5"],
        ["simulate"],
    ],
    "fault-latency-demo": [["fault-latency-demo", "--rounds", "-1"], ["fault-latency-demo", "--rounds", "0"]],
    # {closed}: a loopback port nothing listens on
    "snapshot": [
        ["snapshot", "--namesrv", namesrv, "-o", "{tmp}/s.json"]
        for namesrv in (
            "host",
            "127.0.0.1",
            "127.0.0.1:0",
            "127.0.0.1:65536",
            "127.0.0.1:x",
            "",
            ";",
            "127.0.0.1:{closed};x",
        )
    ]
    + [
        ["snapshot", "--namesrv", "127.0.0.1:{closed}", "--timeout", timeout, "-o", "{tmp}/s.json"]
        for timeout in ("0", "-1", "nan", "inf", "-inf", "1e400", "1e10", "x")
    ]
    + [
        ["snapshot", "--namesrv", "127.0.0.1:{closed}", "--timeout", "0.5", "-o", "{unwritable}"],
        ["snapshot", "--namesrv", "127.0.0.1:{closed}", "--timeout", "0.5", "-o", "{unwritable}.json"],
        ["snapshot", "--namesrv", "127.0.0.1:{closed}", "--timeout", "0.5", "-o", "{tmp}/s.json"],
        ["snapshot", "--namesrv", "127.0.0.1:{closed}", "--timeout", "0.5", "-o", "{tmp}/s.parquet"],
        ["snapshot", "-o", "{tmp}/s.json"],
        ["snapshot", "--namesrv", "127.0.0.1:{closed}"],
    ],
}
#: `consume`: a good command line but for the parts a case replaces (a closed port as the name server)
_CONSUME = [
    "rocketmq-consume",
    "--namesrv",
    "127.0.0.1:{closed}",
    "--group",
    "g",
    "--topic",
    "T",
    "--record",
    "{tmp}/r.jsonl",
]


def _consume(*extra: str, drop: str | None = None) -> list[str]:
    argv = list(_CONSUME)
    if drop is not None:
        i = argv.index(drop)
        del argv[i : i + 2]
    return argv + list(extra)


CLI["watch"] = (
    [["watch", "--namesrv", ns, "--out", "{tmp}/h"] for ns in ("host", "127.0.0.1:0", "", ";", "127.0.0.1:x")]
    + [
        ["watch", "--namesrv", "127.0.0.1:{closed}", "--out", "{tmp}/h", flag, value]
        for flag in ("--interval", "--offsets-interval", "--checkpoint-every", "--retain", "--timeout")
        for value in ("0", "-1", "nan", "x", "1e400")
    ]
    + [["watch", "--namesrv", "127.0.0.1:{closed}", "--out", "{unwritable}"]]
    + [
        ["watch", "--namesrv", "127.0.0.1:{closed}", "--out", "{tmp}/h", "--metrics-port", p]
        for p in ("0", "70000", "x")
    ]
)
CLI["history"] = (
    [["history", d] for d in ("{tmp}/none", "{tmp}", "{unwritable}")]
    + [["history", "{history}", flag, v] for flag in ("--from", "--to") for v in ("x", "2026-13-01", "")]
    + [["history", "{history}", flag, v] for flag in ("--window", "--span") for v in ("0", "-1", "nan", "x")]
    + [["history", "{history}", flag, v] for flag in ("--min-cycles", "--min-episodes") for v in ("0", "-1", "x")]
)
_SCALE = ["scale", "--queues", "16", "--strategy", "AVG", "--consumers", "5", "--consume-rate", "100"]


def _scale(flag: str, value: str) -> list[str]:
    """``mqbalance scale`` with ``flag`` set to ``value`` (replacing it when the good call has it)."""
    argv = list(_SCALE)
    if flag in argv:
        del argv[argv.index(flag) : argv.index(flag) + 2]
    if flag == "--client-ids":
        del argv[argv.index("--consumers") : argv.index("--consumers") + 2]
    return [*argv, flag, value]


CLI["scale"] = (
    [_scale("--queues", v) for v in ("0", "-1", "x", "", "b:0", "b:x", "b:4,b:4", ":4", "4,", "99999999999")]
    + [_scale("--strategy", v) for v in ("NOPE", "", "CONFIG", "\ud800")]
    + [["scale", "--queues", "16", "--assignor", "nope", "--consumers", "5", "--consume-rate", "100"]]
    + [_scale("--consumers", v) for v in ("0", "-1", "x", "")]
    + [_scale("--client-ids", v) for v in ("", ",", "a,,b", "a,a")]
    + [_scale("--consume-rate", v) for v in ("0", "-1", "nan", "inf", "x")]
    + [_scale("--lag", v) for v in ("-1", "x", "1.5")]
    + [_scale("--produce-rate", v) for v in ("-1", "nan", "inf", "x")]
    + [_scale("--drain-target", v) for v in ("0", "-1", "x", "nan", "")]
    + [_scale("--max-consumers", v) for v in ("0", "-1", "x", "99999999999")]
    + [_scale("--id-samples", v) for v in ("0", "-1", "x", "99999999999")]
    + [[a for a in _SCALE if a not in ("--consume-rate", "100")]]
)
CLI["rocketmq-consume"] = (
    [_consume(drop=option) for option in ("--namesrv", "--group", "--topic")]
    + [
        _consume(drop="--namesrv") + ["--namesrv", namesrv]
        for namesrv in ("host", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:x", "", ";", "h:{closed};x")
    ]
    + [_consume(drop="--group") + ["--group", group] for group in ("", " ", "\ud800")]
    + [_consume(drop="--topic") + ["--topic", topic] for topic in ("", " ", "\ud800")]
    + [_consume("--topic", "")]
    + [_consume("--strategy", strategy) for strategy in ("NOPE", "", "CONFIG", "MACHINE_ROOM")]
    + [_consume("--strategy", "AVG", "--idcs", "hz"), _consume("--strategy", "MACHINE_ROOM", "--idcs", "\ud800")]
    + [_consume("--timeout", t) for t in ("0", "-1", "nan", "inf", "-inf", "1e400", "1e10", "x")]
    + [
        _consume(f"--{option}", value)
        for option in ("heartbeat-interval-ms", "persist-interval-ms", "rebalance-interval-ms")
        for value in ("0", "-1", "nan", "1.5", "x")
    ]
    + [_consume("--duration", d) for d in ("0", "-1", "nan", "inf", "-inf", "x")]
    + [_consume("--work-ms", w) for w in ("-1", "nan", "inf", "1e400", "x")]
    + [_consume("--semantics", "3.x"), _consume("--from", "middle"), _consume("--client-id", "\ud800")]
    + [
        _consume(drop="--record") + ["--record", record]
        for record in ("{unwritable}", "{unwritable}.jsonl", "{tmp}", "{tmp}/nul\x00.jsonl")
    ]
    + [_consume("--timeout", "0.5"), _consume("--timeout", "0.5", "--namesrv", "127.0.0.1:{closed};[::1]:{closed}")]
)
_KAFKA_CONSUME = ["kafka-consume", "--bootstrap", "127.0.0.1:{closed}", "--group", "g", "--topic", "T"]
CLI["kafka-consume"] = (
    [_KAFKA_CONSUME, _KAFKA_CONSUME + ["--record", "{tmp}/r.jsonl"]]
    + [[a for a in _KAFKA_CONSUME if a not in (o, v)] for o, v in zip(_KAFKA_CONSUME[1::2], _KAFKA_CONSUME[2::2])]
    + [
        _KAFKA_CONSUME[:2] + [bootstrap] + _KAFKA_CONSUME[3:]
        for bootstrap in ("host", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:x", "", ",", "h:{closed},x")
    ]
    + [_KAFKA_CONSUME + ["--topic", topic] for topic in ("", "\ud800")]
    + [_KAFKA_CONSUME + ["--assignor", a] for a in ("NOPE", "", "uniform")]
    + [_KAFKA_CONSUME + ["--impl", "java"], _KAFKA_CONSUME + ["--client-id", "\ud800"]]
    + [
        _KAFKA_CONSUME + [f"--{option}", value]
        for option in ("session-timeout-ms", "heartbeat-interval-ms", "max-poll-interval-ms")
        for value in ("0", "-1", "1.5", "x")
    ]
    + [_KAFKA_CONSUME + ["--duration", d] for d in ("0", "-1", "nan", "inf", "x")]
    + [_KAFKA_CONSUME + ["--work-ms", w] for w in ("-1", "nan", "inf", "x")]
    + [_KAFKA_CONSUME + ["--connect-timeout", c] for c in ("0", "-1", "nan", "inf", "x")]
    + [_KAFKA_CONSUME + ["--record", r] for r in ("{unwritable}", "{tmp}", "{tmp}/nul\x00.jsonl")]
)
_NO_RATE = ["scale", "--queues", "16", "--strategy", "AVG", "--consumers", "5"]
CLI["scale"] += (
    [["scale"], ["scale", "--queues", "16", "--strategy", "AVG", "--consume-rate", "10"]]
    + [_NO_RATE + ["--consume-rate", r] for r in ("0", "-1", "nan", "x")]
    + [_NO_RATE + ["--consume-rate", "10", flag, v] for flag in ("--lag", "--max-consumers") for v in ("-1", "x")]
    + [_NO_RATE + ["--consume-rate", "10", "--produce-rate", "-1"], _NO_RATE + ["--consume-rate", "10", "--group", "g"]]
    + [["scale", "--history", "{tmp}/absent", "--group", "g"], ["scale", "--history", "{history}"]]
    + [["scale", "--history", "{history}", "--group", "g"]]  # an empty history: no such group
    + [["scale", "--history", "{history}", "--group", "g", "--window", w] for w in ("0", "-1s", "x")]
)
#: Subcommands not walked, with the reason.
CLI_EXEMPT = {
    "zk-consume": "a ZooKeeper group member (needs a server); its options are checked by "
    "InvalidCoordinationConfigError",
    "group": "ZooKeeper group status (needs a server)",
    "topics": "ZooKeeper topic setup (needs a server)",
}


def _subcommands() -> set[str]:
    code, err = _cli(["--no-such-option"])
    assert code == 2
    choices = err.split("{", 1)[1].split("}", 1)[0]
    return set(choices.split(","))


def test_every_cli_command_is_walked() -> None:
    missing = _subcommands() - set(CLI) - set(CLI_EXEMPT)
    assert not missing, f"CLI commands not covered by the bad-input walker: {sorted(missing)}"


_CLI_CASES = [argv for cases in CLI.values() for argv in cases]


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _bad_files(tmp_path_factory.mktemp("bad"))


@pytest.mark.parametrize("argv", _CLI_CASES, ids=[" ".join(a) for a in _CLI_CASES])
def test_cli_refuses_bad_input(argv: list[str], bad_files: dict[str, Path], tmp_path: Path) -> None:
    """Exit 2 and one line (argparse: its usage line and one error line), never a traceback; checked
    before any Spark job or simulation starts."""
    unwritable = tmp_path / "file"
    unwritable.write_text("x")
    history = history_writer_mod.open_history(tmp_path / "history", create=True)
    names = {"tmp": str(tmp_path), "unwritable": str(unwritable / "out"), "closed": str(CLOSED_PORT)}
    names |= {k: str(v) for k, v in bad_files.items()} | {"history": str(history)}
    args = []
    for a in argv:
        for key, value in names.items():
            a = a.replace("{" + key + "}", value)
        args.append(a)
    started = time.monotonic()
    code, err = _cli(args)
    assert time.monotonic() - started < 5, f"{args} took {time.monotonic() - started:.1f} s"
    assert code == 2, (args, code, err)
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in err, err
    if errors[0].startswith("mqbalance: error:"):
        assert len(lines) == 1, err


def test_snapshot_checks_its_output_before_reading_the_cluster(tmp_path: Path) -> None:
    """An unwritable ``-o`` is refused before any request: the error names the path, not the (here
    unreachable) name server, and nothing is read first."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in (blocker / "s.json", blocker / "s.parquet", blocker):
        argv = ["snapshot", "--namesrv", f"127.0.0.1:{CLOSED_PORT}", "--timeout", "0.5", "-o", str(out)]
        code, err = _cli(argv)
        assert code == 2, err
        assert str(blocker) in err and "name server" not in err, err


def test_snapshot_of_an_unreachable_name_server_fails_within_its_timeout(tmp_path: Path) -> None:
    """A closed port: exit 2 at once, one line naming the address; nothing written."""
    started = time.monotonic()
    code, err = _cli(
        ["snapshot", "--namesrv", f"127.0.0.1:{CLOSED_PORT}", "--timeout", "0.5", "-o", f"{tmp_path}/s.json"]
    )
    assert time.monotonic() - started < 1.5
    assert code == 2
    addr = f"127.0.0.1:{CLOSED_PORT}"
    assert err.strip() == f"mqbalance: error: no name server answered: {addr}: cannot connect: Connection refused", err
    assert not (tmp_path / "s.json").exists()


def test_consume_of_an_unreachable_name_server_fails_at_once(tmp_path: Path) -> None:
    """A closed port: exit 2 at once, one line naming the address, before the member joins; the
    record file it had created is removed (it holds nothing)."""
    record = tmp_path / "r.jsonl"
    argv = [*_CONSUME, "--timeout", "0.5"]
    argv = [a.replace("{closed}", str(CLOSED_PORT)).replace("{tmp}", str(tmp_path)) for a in argv]
    started = time.monotonic()
    code, err = _cli(argv)
    assert time.monotonic() - started < 1.5
    addr = f"127.0.0.1:{CLOSED_PORT}"
    assert code == 2, err
    assert err.strip() == f"mqbalance: error: no name server answered: {addr}: cannot connect: Connection refused", err
    assert not record.exists()


def test_consume_checks_its_record_file_before_the_cluster(tmp_path: Path) -> None:
    """An unwritable ``--record`` is named, not the (here unreachable) name server."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    argv = [a.replace("{closed}", str(CLOSED_PORT)) for a in _consume(drop="--record")]
    code, err = _cli([*argv, "--record", str(blocker / "r.jsonl")])
    assert code == 2, err
    assert str(blocker) in err and "name server" not in err, err


@pytest.mark.parametrize("path", _BAD_RECORD_PATHS, ids=[Path(p).name for p in _BAD_RECORD_PATHS])
def test_a_bad_record_file_is_named(path: str) -> None:
    """An unreadable or garbage record file: a typed error whose message names the file."""
    with pytest.raises(MQBalanceError) as e:
        rocketmq_mod.load_records([_GOOD_RECORDS, path])
    name = Path(path).name
    assert name in str(e.value) or repr(name)[1:-1] in str(e.value), e.value


def test_check_records_counts_ranges_not_offsets() -> None:
    """A queue whose max offset is 2**62 with nothing processed, and a record of 2**62 offsets: the
    answer at once (an offset-by-offset count would not finish)."""
    started = time.monotonic()
    check = rocketmq_mod.check_records({"m": [{**_GOOD_ROW, "a": 1, "b": 2**62}]}, {"b/T/0": 2**62, "b/T/1": 2**62})
    assert time.monotonic() - started < 1
    assert check.lost == {"b/T/0": [(0, 1)], "b/T/1": [(0, 2**62)]}
    assert (check.processed, check.unique, check.duplicates) == (2**62 - 1, 2**62 - 1, 0)


def test_a_long_simulation_stops_on_ctrl_c(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT) ends a long run promptly: exit 130, one line, no traceback. Promptly means
    within the time the process took to start, measured here (seconds on a loaded machine), + 5 s."""
    import signal
    import time

    scenario = tmp_path / "long.yaml"
    scenario.write_text("topics: {T: {queues_per_broker: 8}}\ngroup: {consumers: 4}\nduration: 240h\n")
    out = tmp_path / "out"
    cli = Path(sys.executable).with_name("mqbalance")
    launched = time.monotonic()
    proc = subprocess.Popen(
        as_at_a_terminal([str(cli), "simulate", str(scenario), "--out", str(out)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not out.exists():  # the command has started: its output folder is made before the run
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() - launched < 120, "simulate did not start within 120 s"
            time.sleep(0.05)
        start_up = time.monotonic() - launched
        time.sleep(1)
        assert proc.poll() is None, "the 240 h scenario should still be running"
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert time.monotonic() - started < start_up + 5, (time.monotonic() - started, start_up)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "mqbalance: interrupted", err


@pytest.mark.parametrize("epsilon", [0.25, 0, -0.5, math.nan, math.inf, "0.1", True])
def test_same_verdict_for_epsilon_on_every_path(epsilon: Any, tmp_path: Path) -> None:
    """CONSISTENT_HASH_BOUNDED's epsilon: API, JSON snapshot, Parquet snapshot, YAML scenario agree."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import yaml

    def refused(f: Callable[[], Any]) -> bool:
        try:
            f()
        except MQBalanceError:
            return True
        return False

    api = refused(lambda: ConsistentHashBounded(epsilon=epsilon).assign(Q(), ["a"]))
    data = json.loads(json.dumps(_SNAPSHOT))
    data["groups"]["g"]["strategy"] = {"name": "CONSISTENT_HASH_BOUNDED", "epsilon": epsilon}
    as_json = refused(lambda: from_json.snapshot_from_dict(json.loads(json.dumps(data))))
    good = {**_SNAPSHOT, "groups": {"g": {**_SNAPSHOT["groups"]["g"], "strategy": "CONSISTENT_HASH_BOUNDED"}}}
    snapshot_files.write_parquet(from_json.snapshot_from_dict(good), tmp_path / "p")
    conns = pq.read_table(tmp_path / "p" / "connections.parquet")
    column = pa.array([epsilon] * conns.num_rows)
    conns = conns.set_column(conns.column_names.index("epsilon"), "epsilon", column)
    pq.write_table(conns, tmp_path / "p" / "connections.parquet")
    as_parquet = refused(lambda: snapshot_files.load_snapshot(tmp_path / "p"))
    strategy = {"name": "CONSISTENT_HASH_BOUNDED", "epsilon": epsilon}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({**_SCENARIO, "group": {"consumers": 2, "strategy": strategy}}))
    as_yaml = refused(lambda: sim_mod.load_scenario(tmp_path / "s.yaml"))
    verdicts = {"api": api, "json": as_json, "parquet": as_parquet, "yaml": as_yaml}
    assert len(set(verdicts.values())) == 1, verdicts
    legal = not isinstance(epsilon, (bool, str)) and math.isfinite(epsilon) and epsilon >= 0
    assert api == (not legal), verdicts
