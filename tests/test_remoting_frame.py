"""The remoting frame codec without a socket: frames built by hand from the documented layout
(length, header length with the serialisation type in the high byte, JSON header, body), hostile
prefixes and headers, the message format of pull bodies."""

from __future__ import annotations

import json
import struct
import zlib

import pytest

from mqbalance.exceptions import MQBalanceError, RemotingFrameError
from mqbalance.remoting import MAX_FRAME_BYTES, RemotingCommand
from mqbalance.remoting.api import decode_messages, decode_properties, encode_properties, strategy_from_running_info
from mqbalance.remoting.frame import decode_payload, frame_length, loads_json


def hand_frame(header: dict | bytes, body: bytes = b"", kind: int = 0) -> bytes:
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack(">II", 4 + len(h) + len(body), (kind << 24) | len(h)) + h + body


# A response header as the Rust server's own codec tests write it (rocketmq-protocol tests.rs).
RUST_HEADER = (
    b'{"code":1,"language":"JAVA","version":501,"opaque":1,"flag":1,"remark":"remark",'
    b'"extFields":{"a":"1"},"serializeTypeCurrentRPC":"JSON"}'
)


def test_decode_a_hand_built_frame():
    cmd = RemotingCommand.decode(hand_frame(RUST_HEADER, b"body"))
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields, cmd.body) == (
        1,
        1,
        1,
        "remark",
        {"a": "1"},
        b"body",
    )
    assert cmd.is_response and not cmd.is_oneway and cmd.version == 501 and cmd.language == "JAVA"


def test_encode_layout():
    cmd = RemotingCommand(105, opaque=42, flag=2, remark="é", ext_fields={"topic": "T", "n": "3"}, body=b"\x00\x01")
    raw = cmd.encode()
    total, mark = struct.unpack(">II", raw[:8])
    header_len = mark & 0xFFFFFF
    assert total == len(raw) - 4 and mark >> 24 == 0
    header = json.loads(raw[8 : 8 + header_len])
    assert header == {
        "code": 105,
        "language": "JAVA",
        "version": cmd.version,
        "opaque": 42,
        "flag": 2,
        "remark": "é",
        "extFields": {"topic": "T", "n": "3"},
        "serializeTypeCurrentRPC": "JSON",
    }
    assert raw[8 + header_len :] == b"\x00\x01"
    assert RemotingCommand.decode(raw) == cmd and cmd.is_oneway


def test_ext_field_values_become_strings_and_nulls_are_tolerated():
    cmd = RemotingCommand.decode(hand_frame({"code": 0, "flag": 1, "opaque": 3, "extFields": {"offset": 7, "x": None}}))
    assert cmd.ext_fields == {"offset": "7", "x": ""} and cmd.remark is None


@pytest.mark.parametrize(
    "prefix, message",
    [
        (struct.pack(">i", -1), "below the minimum"),
        (struct.pack(">i", 3), "below the minimum"),
        (struct.pack(">i", MAX_FRAME_BYTES + 1), "beyond the limit"),
        (struct.pack(">i", 2**31 - 1), "beyond the limit"),
        (b"HTTP", "1213486160 is beyond the limit"),
    ],
)
def test_absurd_declared_lengths_are_refused_from_the_prefix(prefix, message):
    with pytest.raises(RemotingFrameError, match=message):
        frame_length(prefix)
    assert frame_length(struct.pack(">i", MAX_FRAME_BYTES)) == MAX_FRAME_BYTES


@pytest.mark.parametrize(
    "payload, message",
    [
        (struct.pack(">I", 100) + b"{}", "header length 100 exceeds"),
        (struct.pack(">I", (1 << 24) | 2) + b"{}", "serialisation type 1"),
        (struct.pack(">I", 5) + b"{nope", "not JSON"),
        (struct.pack(">I", 4) + b"\xff\xfe\xfd\xfc", "not JSON"),
        (struct.pack(">I", 2) + b"[]", "not a JSON object"),
        (struct.pack(">I", 25) + b'{"code":"x","opaque":1  }', "malformed field"),
        (struct.pack(">I", 30) + b'{"code":1,"extFields":[1,2,3]}', "malformed field"),
    ],
)
def test_hostile_headers(payload, message):
    with pytest.raises(RemotingFrameError, match=message) as info:
        decode_payload(payload)
    assert isinstance(info.value, MQBalanceError)


def test_whole_frame_length_must_match():
    raw = RemotingCommand(1).encode()
    with pytest.raises(RemotingFrameError, match="declares"):
        RemotingCommand.decode(raw + b"x")
    with pytest.raises(RemotingFrameError, match="no length prefix"):
        RemotingCommand.decode(b"\x00")


def test_fastjson_integer_keys():
    # How a Java name server (fastjson) writes TopicRouteData.brokerAddrs and offset tables.
    assert loads_json(b'{"brokerAddrs":{0:"a:1",1:"b:2"},"t":{"x@g":{0:5, 12 :7}}}') == {
        "brokerAddrs": {"0": "a:1", "1": "b:2"},
        "t": {"x@g": {"0": 5, "12": 7}},
    }
    with pytest.raises(ValueError):
        loads_json(b"{oops}")


def message_bytes(topic: str, queue_id: int, offset: int, body: bytes, props: str, *, v2: bool = False, sys_flag=0):
    """One stored message in the commit log layout of ``MessageDecoder`` (IPv4 hosts)."""
    t = topic.encode()
    p = props.encode()
    rest = (
        struct.pack(">iiiqqiq", 0x5A5A, queue_id, 0, offset, 1000 + offset, sys_flag, 1_700_000_000_000)
        + bytes([127, 0, 0, 1])
        + struct.pack(">i", 5555)
        + struct.pack(">q", 1_700_000_000_123)
        + bytes([127, 0, 0, 1])
        + struct.pack(">i", 10911)
        + struct.pack(">iqi", 2, 0, len(body))
        + body
        + (struct.pack(">H", len(t)) if v2 else bytes([len(t)]))
        + t
        + struct.pack(">H", len(p))
        + p
    )
    magic = -626843477 if v2 else -626843481
    whole = struct.pack(">ii", 8 + len(rest), magic) + rest
    return whole


def test_decode_messages_v1_v2_and_compressed():
    props = encode_properties({"TAGS": "tagA", "KEYS": "k1"})
    data = (
        message_bytes("T", 3, 0, b"hello", props)
        + message_bytes("T" * 300, 3, 1, b"x", "", v2=True)
        + message_bytes("T", 3, 2, zlib.compress(b"zipped"), "", sys_flag=1)
    )
    msgs = decode_messages(data)
    assert [(m.topic[:2], m.queue_id, m.queue_offset, m.body) for m in msgs] == [
        ("T", 3, 0, b"hello"),
        ("TT", 3, 1, b"x"),
        ("T", 3, 2, b"zipped"),
    ]
    assert msgs[0].tags == "tagA" and msgs[0].keys == "k1" and msgs[0].reconsume_times == 2
    assert msgs[0].store_timestamp == 1_700_000_000_123 and len(msgs[1].topic) == 300
    with pytest.raises(RemotingFrameError, match="overruns"):
        decode_messages(data[:-3])
    with pytest.raises(RemotingFrameError, match="magic"):
        decode_messages(data[:4] + b"\x00\x00\x00\x00" + data[8:])


def test_properties_and_reported_strategies():
    assert decode_properties("a\x01b\x02c\x01\x02junk") == {"a": "b", "c": ""}
    java = "org.apache.rocketmq.client.consumer.rebalance."
    assert strategy_from_running_info({"properties": {"allocateMessageQueueStrategy": java + "X@1"}}) == "X"
    assert (
        strategy_from_running_info(
            {"properties": {"allocateMessageQueueStrategy": java + "AllocateMessageQueueConsistentHash@5e2de80c"}}
        )
        == "CONSISTENT_HASH"
    )
    assert (
        strategy_from_running_info({"properties": {"allocateMessageQueueStrategy": "AVG_BY_CIRCLE"}}) == "AVG_BY_CIRCLE"
    )
    assert strategy_from_running_info({}) is None
