"""The remoting frame, as bytes: a pure codec (no socket), so hostile input is tested without one.

A frame is a 4-byte big-endian length ``L`` (of everything after it), a 4-byte header length whose
high byte is the serialisation type (0 = JSON, the only one we speak), the JSON header
``{code, language, version, opaque, flag, remark, extFields, serializeTypeCurrentRPC}`` and the
body. Flag bit 0 marks a response, bit 1 a one-way request. A declared length beyond
:data:`MAX_FRAME_BYTES` (or below the minimum) is refused from the 4-byte prefix alone, before
anything is allocated.

>>> cmd = RemotingCommand(105, opaque=7, ext_fields={"topic": "T"})
>>> raw = cmd.encode()
>>> int.from_bytes(raw[:4], "big") == len(raw) - 4, RemotingCommand.decode(raw) == cmd
(True, True)
>>> frame_length(b"HTTP")
Traceback (most recent call last):
...
mqbalance.exceptions.RemotingFrameError: declared frame length 1213486160 is beyond the limit of 16777216 bytes
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from mqbalance import _validate
from mqbalance.exceptions import InvalidInputError, RemotingFrameError
from mqbalance.remoting.codes import LANGUAGE, VERSION

__all__ = ["MAX_FRAME_BYTES", "RemotingCommand", "frame_length", "loads_json"]

#: the largest declared frame we accept (Java's and the Rust server's ``frameMaxLength``: 16 MiB)
MAX_FRAME_BYTES = 16 * 1024 * 1024

#: the header's JSON writer (one, not one per frame as ``json.dumps`` with options builds)
_HEADER_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)

#: a str as JSON text, as the header's writer writes it (UTF-8, not ASCII-escaped)
_json_text = json.encoder.encode_basestring
_LANGUAGE_JSON = _json_text(LANGUAGE)

_FLAG_RESPONSE = 1
_FLAG_ONEWAY = 2
_SERIALIZE_JSON = 0


@dataclass
class RemotingCommand:
    """One request or response. ``ext_fields`` are the request/response header's fields (strings,
    as Java sends them); ``body`` is raw bytes (usually JSON)."""

    code: int
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    language: str = LANGUAGE
    version: int = VERSION

    @property
    def is_response(self) -> bool:
        return bool(self.flag & _FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & _FLAG_ONEWAY)

    def response(self, code: int = 0, *, remark: str | None = None, body: bytes = b"") -> RemotingCommand:
        """The response to this request: same opaque, the response flag set."""
        return RemotingCommand(code, opaque=self.opaque, flag=_FLAG_RESPONSE, remark=remark, body=body)

    def encode(self) -> bytes:
        """The whole frame, length prefix included."""
        header = _HEADER_JSON.encode(
            {
                "code": self.code,
                "language": self.language,
                "version": self.version,
                "opaque": self.opaque,
                "flag": self.flag,
                "remark": self.remark,
                "extFields": {k: str(v) for k, v in self.ext_fields.items()},
                "serializeTypeCurrentRPC": "JSON",
            }
        ).encode("utf-8")
        total = 4 + len(header) + len(self.body)
        if total > MAX_FRAME_BYTES:
            raise RemotingFrameError(f"frame of {total} bytes is beyond the limit of {MAX_FRAME_BYTES} bytes", None)
        return struct.pack(">II", total, (_SERIALIZE_JSON << 24) | len(header)) + header + self.body

    @classmethod
    def decode(cls, frame: bytes, *, max_frame_bytes: int = MAX_FRAME_BYTES) -> RemotingCommand:
        """Decode one whole frame (length prefix included, as :meth:`encode` writes it)."""
        frame = _bytes(frame, "frame")
        if len(frame) < 4:
            raise RemotingFrameError(f"frame of {len(frame)} bytes has no length prefix", None)
        length = frame_length(frame[:4], max_frame_bytes=max_frame_bytes)
        if len(frame) - 4 != length:
            raise RemotingFrameError(f"frame declares {length} bytes after its prefix but has {len(frame) - 4}", None)
        return decode_payload(frame[4:])


def request_frame(code: int, opaque: int, ext_fields: dict[str, str]) -> bytes:
    """The frame of a request without a body (``ext_fields`` strings, as :meth:`RemotingCommand.encode`
    sends them), byte for byte what ``RemotingCommand(code, opaque=opaque, ext_fields=ext_fields).encode()``
    gives, written without building the command (pipelined reads send 10^4 of them a tick).

    >>> fields = {"consumerGroup": "g"}
    >>> request_frame(203, 7, fields) == RemotingCommand(203, opaque=7, ext_fields=fields).encode()
    True
    """
    ext = ",".join(_json_text(k) + ":" + _json_text(v) for k, v in ext_fields.items())
    header = (
        f'{{"code":{int(code)},"language":{_LANGUAGE_JSON},"version":{VERSION},"opaque":{int(opaque)},"flag":0,'
        f'"remark":null,"extFields":{{{ext}}},"serializeTypeCurrentRPC":"JSON"}}'
    ).encode()
    total = 4 + len(header)
    if total > MAX_FRAME_BYTES:
        raise RemotingFrameError(f"frame of {total} bytes is beyond the limit of {MAX_FRAME_BYTES} bytes", None)
    return struct.pack(">II", total, (_SERIALIZE_JSON << 24) | len(header)) + header


def frame_length(prefix: bytes, *, max_frame_bytes: int = MAX_FRAME_BYTES) -> int:
    """The number of bytes that follow a 4-byte length prefix, checked before reading them."""
    prefix = _bytes(prefix, "prefix")
    if len(prefix) != 4:
        raise InvalidInputError(f"a length prefix is 4 bytes, got {len(prefix)}: {prefix!r:.40}", prefix)
    if _validate.integer(max_frame_bytes, "max_frame_bytes") < 4:
        raise InvalidInputError(f"max_frame_bytes must be at least 4, got {max_frame_bytes!r}", max_frame_bytes)
    length: int = struct.unpack(">i", prefix)[0]
    if length < 4:
        raise RemotingFrameError(f"declared frame length {length} is below the minimum of 4 bytes", None)
    if length > max_frame_bytes:
        raise RemotingFrameError(f"declared frame length {length} is beyond the limit of {max_frame_bytes} bytes", None)
    return length


def decode_payload(payload: bytes) -> RemotingCommand:
    """Decode what follows the length prefix: header length, header, body."""
    payload = _bytes(payload, "payload")
    if len(payload) < 4:
        raise RemotingFrameError(f"frame of {len(payload)} bytes after its prefix has no header length", None)
    (mark,) = struct.unpack(">I", payload[:4])
    kind, header_len = mark >> 24, mark & 0xFFFFFF
    if kind != _SERIALIZE_JSON:
        raise RemotingFrameError(f"serialisation type {kind} is not supported (only JSON, 0)", None)
    if header_len > len(payload) - 4:
        raise RemotingFrameError(
            f"declared header length {header_len} exceeds the frame's {len(payload) - 4} remaining bytes", None
        )
    try:
        header = loads_json(payload[4 : 4 + header_len])
    except RemotingFrameError as e:
        raise RemotingFrameError(f"frame header is {e}", None) from None
    if not isinstance(header, dict):
        raise RemotingFrameError(f"frame header is not a JSON object: {header!r:.80}", None)
    try:
        code, opaque, flag = (_java_int(header, k) for k in ("code", "opaque", "flag"))
        ext = header.get("extFields") or {}
        if not isinstance(ext, dict):
            raise TypeError(f"extFields is {type(ext).__name__}")
        remark = header.get("remark")
        return RemotingCommand(
            code,
            opaque=opaque,
            flag=flag,
            remark=None if remark is None else str(remark),
            ext_fields={str(k): "" if v is None else str(v) for k, v in ext.items()},
            body=bytes(payload[4 + header_len :]),
            language=str(header.get("language", "")),
            version=_java_int(header, "version"),
        )
    except (TypeError, ValueError) as e:
        raise RemotingFrameError(f"frame header has a malformed field: {e}", None) from None


def _bytes(data: Any, name: str) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidInputError(f"{name} must be bytes, got {type(data).__name__} {data!r:.40}", data)
    return bytes(data)


def _java_int(header: dict[str, Any], key: str) -> int:
    """A header field that Java reads as an ``int``: an integer (or its decimal string) in range."""
    value = header.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{key} is {value!r:.40}, not an integer")
    number = int(value) if isinstance(value, int) or len(value) <= 20 else None
    if number is None or not _validate.is_java_int(number):
        raise ValueError(f"{key} {value!r:.40} is not a Java int")
    return number


_BARE_INT_KEY = re.compile(rb"([{,])\s*(-?\d+)\s*:")
_OBJECT_KEY = re.compile(rb"([{,])\s*(\{[^{}]*\})\s*:")


def _quote_object_key(m: re.Match[bytes]) -> bytes:
    return m.group(1) + json.dumps(m.group(2).decode("utf-8")).encode("utf-8") + b":"


def loads_json(data: bytes) -> Any:
    """Parse a JSON header or body (UTF-8). Java (fastjson) writes maps with integer keys unquoted
    (``{0:"10.0.0.1:10911"}``) and maps keyed by objects with the object as the key (a Java
    client's ``ConsumerRunningInfo.mqTable``: ``{{"topic":"T",...}:{...}}``); when strict JSON
    fails, those keys are quoted (an object key becomes the string of its JSON text) and parsed.
    Anything else that is not JSON (or nests deeper than Python's recursion limit) is a
    :class:`~mqbalance.exceptions.RemotingFrameError`.

    >>> loads_json(b'{"brokerAddrs":{0:"a:1"}}')
    {'brokerAddrs': {'0': 'a:1'}}
    >>> loads_json(b'{"mqTable":{{"topic":"T","queueId":0}:{"commitOffset":3}}}')
    {'mqTable': {'{"topic":"T","queueId":0}': {'commitOffset': 3}}}
    """
    data = _bytes(data, "data")
    try:
        try:
            return json.loads(data)
        except json.JSONDecodeError:
            fixed = _OBJECT_KEY.sub(_quote_object_key, _BARE_INT_KEY.sub(rb'\1"\2":', data))
            if fixed == data:
                raise
            return json.loads(fixed)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError, int digits limit
        raise RemotingFrameError(f"not JSON: {e}", None) from None
