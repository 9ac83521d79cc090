"""Kafka answers decoded in Rust: a request sent through kafka-python's connection code whose
answer is handed back as its bytes (:class:`RawAnswer`), and the decoders of those bytes.

The watcher's largest answer is the ``OffsetFetch`` of every group (v8: one request per
coordinator, 2.0 MB for 100 groups × 1,000 partitions); kafka-python builds an object per
partition to decode it (0.4–1.4 s on a loaded machine). :class:`RawOffsetFetchRequest` is the same
request, sent on the same connection with the same version negotiation, timeouts and throttling;
only the decoding of its body moves to :func:`decode_offset_fetch` (``mqbalance._core``, with the
GIL released), which gives columns: one row per partition.

Bytes that are not the answer (truncated, a length beyond what is left, a null where none is
allowed, not UTF-8, trailing bytes) raise :class:`~mqbalance.exceptions.KafkaWireError` naming the
field and the byte offset.

>>> body = bytes.fromhex("00000000" "02" "0267" "02" "0274" "02" "00000000" "0000000000000005" "ffffffff"
...                      "01" "0000" "00" "00" "0000" "00" "00")
>>> a = decode_offset_fetch(body, version=8)
>>> a.groups, a.topics, a.partition.tolist(), a.committed_offset.tolist()
(['g'], ['t'], [0], [5])
>>> committed_offsets(a)
{('g', 't', '', 0): 5}
>>> from mqbalance.exceptions import KafkaWireError
>>> try:
...     decode_offset_fetch(body[:3], version=8)
... except KafkaWireError as e:
...     print(e)
OffsetFetch answer truncated at byte 0 reading throttle_time_ms: needs 4 bytes, 3 left
"""

from __future__ import annotations

from collections import defaultdict
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from kafka.errors import for_code as error_for_code
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse
from kafka.util import classproperty

from mqbalance import _core

__all__ = [
    "OffsetFetchColumns",
    "RawAnswer",
    "RawOffsetFetchRequest",
    "committed_offsets",
    "decode_offset_fetch",
    "read_committed_offsets",
]

_Queue = tuple[str, str, str, int]  # group, topic, "" (a Kafka partition has no broker name), partition


class OffsetFetchColumns(NamedTuple):
    """An ``OffsetFetch`` answer (v8–9): per group its id and error code; per partition row the
    indices of its group and topic, partition, committed offset (``-1``: none), leader epoch and
    error code, in the answer's order."""

    throttle_time_ms: int
    groups: list[str]
    group_errors: npt.NDArray[np.int16]
    topics: list[str]
    group: npt.NDArray[np.uint32]
    topic: npt.NDArray[np.uint32]
    partition: npt.NDArray[np.int32]
    committed_offset: npt.NDArray[np.int64]
    leader_epoch: npt.NDArray[np.int32]
    error_code: npt.NDArray[np.int16]


def decode_offset_fetch(data: bytes, *, version: int) -> OffsetFetchColumns:
    """The body of an ``OffsetFetch`` answer of ``version`` (8 or 9), after its response header."""
    return OffsetFetchColumns(*_core.decode_offset_fetch(bytes(data), version=version))


def committed_offsets(answer: OffsetFetchColumns) -> dict[tuple[str, str, str, int], int]:
    """Every committed offset (``>= 0``) of the answer, keyed ``(group, topic, "", partition)``,
    as the watcher reads them; the first error in the answer's order (a group's error before its
    partitions') raised as kafka-python's error class, with kafka-python's admin messages."""
    bad_groups = np.flatnonzero(answer.group_errors)
    bad_rows = np.flatnonzero(answer.error_code)
    if bad_groups.size or bad_rows.size:
        g = int(bad_groups[0]) if bad_groups.size else len(answer.groups)
        if bad_rows.size and int(answer.group[bad_rows[0]]) < g:
            r = int(bad_rows[0])
            raise error_for_code(int(answer.error_code[r]))(
                f"OffsetFetchResponse failed for partition {int(answer.partition[r])}"
            )
        raise error_for_code(int(answer.group_errors[g]))(f"OffsetFetchResponse failed for group '{answer.groups[g]}'.")
    keep = answer.committed_offset >= 0
    groups = np.array(answer.groups, dtype=object)[answer.group[keep]].tolist()
    topics = np.array(answer.topics, dtype=object)[answer.topic[keep]].tolist()
    keys = zip(groups, topics, repeat(""), answer.partition[keep].tolist(), strict=False)
    return dict(zip(keys, answer.committed_offset[keep].tolist(), strict=True))


class RawAnswer:
    """An answer's body as bytes (after the response header), its version, and the throttle time
    the connection reads from every answer."""

    __slots__ = ("data", "throttle_time_ms", "version")

    def __init__(self, data: bytes, version: int, throttle_time_ms: int) -> None:
        self.data, self.version, self.throttle_time_ms = data, version, throttle_time_ms

    def __repr__(self) -> str:
        return f"RawAnswer(version={self.version}, {len(self.data):,} bytes)"


class _RawDecoder:
    """Stands for the response class in kafka-python's parser: reads the response header as that
    class does, keeps the body."""

    def __init__(self, response_class: Any, version: int) -> None:
        self.response_class, self.version = response_class, version

    def parse_header(self, buffer: Any) -> Any:
        return self.response_class.parse_header(buffer, version=self.version)

    def decode(self, buffer: Any) -> RawAnswer:
        data = buffer.read()
        throttle = int.from_bytes(data[:4], "big", signed=True) if len(data) >= 4 else 0
        return RawAnswer(data, self.version, throttle)


class _RawOffsetFetchHeader(RequestHeader, init=False):  # type: ignore[misc,call-arg]
    __slots__ = ()

    def get_response_class(self) -> _RawDecoder:
        return _RawDecoder(OffsetFetchResponse, self.request_api_version)


class RawOffsetFetchRequest(OffsetFetchRequest, init=False):  # type: ignore[misc,call-arg]
    """:class:`kafka.protocol.consumer.group.OffsetFetchRequest` whose answer is a
    :class:`RawAnswer` (versions 3 and up: every one with a throttle time first)."""

    __slots__ = ()

    @classproperty  # type: ignore[untyped-decorator]
    def header_class(cls) -> type:  # noqa: N805
        return _RawOffsetFetchHeader


def read_committed_offsets(
    admin: Any, groups: list[str], last: dict[int, tuple[bytes, dict[_Queue, int]]] | None = None
) -> dict[_Queue, int]:
    """Every committed offset of ``groups`` (OffsetFetch v8: one request per coordinator for all
    its groups), as kafka-python's ``list_group_offsets`` reads them — the same requests, the same
    errors raised (a group's or a partition's error fails the whole reading) — with the answer's
    body decoded in Rust (:func:`decode_offset_fetch`: 100,000 partitions for 100 groups of 1,000,
    a 2.0 MB answer) instead of into an object per partition. ``last``: per coordinator, the
    answer's bytes (after its throttle time) and what they gave at the last reading, updated here;
    an answer equal to the last one is not decoded again (when nothing was committed meanwhile,
    the same dict comes back). A broker without v8: ``list_group_offsets`` itself."""
    committed: dict[_Queue, int] = {}
    if admin._manager.broker_version_data.api_version(OffsetFetchRequest) < 8:
        for g, parts in admin.list_group_offsets(dict.fromkeys(groups)).items():
            for tp, om in parts.items():
                if om.offset is not None and om.offset >= 0:
                    committed[(g, tp.topic, "", tp.partition)] = om.offset
        return committed
    seen: dict[int, tuple[bytes, dict[_Queue, int]]] = {}

    async def fetch() -> None:
        by_node: dict[int, list[str]] = defaultdict(list)
        for g, node in (await admin._find_coordinator_ids(groups)).items():
            by_node[node].append(g)
        group = OffsetFetchRequest.OffsetFetchRequestGroup
        for node, ids in by_node.items():
            request = RawOffsetFetchRequest(
                groups=[group(group_id=g, topics=None) for g in ids], min_version=8, max_version=8
            )
            answer = await admin._manager.send(request, node_id=node)
            body = answer.data[4:]  # after the throttle time
            before = (last or {}).get(node)
            if before is not None and before[0] == body:
                seen[node] = before
            else:
                seen[node] = (body, committed_offsets(decode_offset_fetch(answer.data, version=answer.version)))

    admin._manager.run(fetch)
    if last is not None:
        last.clear()
        last.update(seen)
    if len(seen) == 1:
        return next(iter(seen.values()))[1]
    for _body, part in seen.values():
        committed.update(part)
    return committed
