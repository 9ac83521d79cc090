"""Private Rust extension. Use the ``mqbalance`` facade instead."""

from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, Literal, SupportsIndex, final, overload

import numpy as np
import numpy.typing as npt

from mqbalance.kafka import TopicPartition

MAX_RING_ENTRIES: int
STICKY_USER_DATA_MAX_TOPIC_BYTES: int
KAFKA_ASSIGNORS: tuple[str, ...]
KAFKA_STICKY_ASSIGNORS: tuple[str, ...]
ZK_ASSIGNORS: tuple[str, ...]
SERVER_ASSIGNORS: tuple[str, ...]
KAFKA_NEWEST_RELEASE: str

_StrColumn = list[Any] | tuple[list[Any], npt.NDArray[np.uint32]]
# Machine rooms: the prefix resolver's separator, or (queue rooms, consumer rooms) columns.
_Rooms = str | tuple[_StrColumn, _StrColumn]

@final
class Strategy:
    def __new__(
        cls,
        kind: str,
        *,
        virtual_node_cnt: int = 10,
        charset: str = "UTF-8",
        consumer_idcs: set[str] | None = None,
        inner: Strategy | None = None,
        epsilon: float = 0.25,
    ) -> Strategy: ...
    @property
    def name(self) -> str: ...
    @property
    def reads_queue_names(self) -> bool: ...

def allocate_positions(
    strategy: Strategy,
    current_id: str | None,
    topics: _StrColumn,
    brokers: _StrColumn,
    queue_ids: npt.NDArray[np.int64],
    consumers: list[Any],
    *,
    rooms: _Rooms | None = None,
) -> npt.NDArray[np.uint32]: ...

@final
class QueueTable:
    def __new__(cls, topics: _StrColumn, brokers: _StrColumn, queue_ids: npt.NDArray[np.int64]) -> QueueTable: ...
    def __len__(self) -> int: ...

def allocate_prepared(
    strategy: Strategy,
    current_id: str | None,
    table: QueueTable,
    items: tuple[Any, ...],
    consumers: list[Any],
    *,
    rooms: _Rooms | None = None,
) -> list[Any]: ...
def assign_prepared(
    strategy: Strategy,
    table: QueueTable,
    items: tuple[Any, ...],
    consumers: list[Any],
    *,
    rooms: _Rooms | None = None,
) -> list[list[Any]]: ...
def assign_positions(
    strategy: Strategy,
    topics: _StrColumn,
    brokers: _StrColumn,
    queue_ids: npt.NDArray[np.int64],
    consumers: list[Any],
    *,
    rooms: _Rooms | None = None,
    previous: npt.NDArray[np.int64] | None = None,
) -> list[list[int]]: ...
def owners(
    strategy: Strategy,
    topics: _StrColumn,
    brokers: _StrColumn,
    queue_ids: npt.NDArray[np.int64],
    consumers: list[Any],
    *,
    presorted: bool = False,
    rooms: _Rooms | None = None,
    previous: npt.NDArray[np.int64] | None = None,
) -> npt.NDArray[np.int64]: ...
def sort_strings_order(items: list[Any]) -> npt.NDArray[np.uint32]: ...
def sort_queues_order(
    topics: _StrColumn, brokers: _StrColumn, queue_ids: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint32]: ...
def ring_hash(text: str, charset: str = "UTF-8") -> int: ...

@final
class TopicPublishInfo:
    def __new__(
        cls, topic: str, queues: list[tuple[str, str, int]], queue_data: list[tuple[str, int, int]]
    ) -> TopicPublishInfo: ...
    @staticmethod
    def from_route(
        topic: str, queue_data: list[tuple[str, int, int]], brokers_with_master: set[str] | None = None
    ) -> TopicPublishInfo: ...
    def queues(self) -> list[tuple[str, str, int]]: ...
    def brokers(self) -> list[str]: ...
    def plain_step(self, counter: int) -> tuple[int, int]: ...
    def select_avoiding(self, last_broker: str | None, counter: int) -> tuple[int, int]: ...
    def __len__(self) -> int: ...

@final
class MQFaultStrategy:
    def __new__(
        cls,
        semantics: str,
        *,
        enabled: bool,
        latency_max: list[int] | None = None,
        not_available_duration: list[int] | None = None,
        start_detector_enable: bool = False,
        detect_interval: int = 2000,
    ) -> MQFaultStrategy: ...
    @property
    def latency_max(self) -> list[int]: ...
    @property
    def not_available_duration(self) -> list[int]: ...
    def compute_not_available_duration(self, latency: int) -> int: ...
    def update_fault_item(self, broker: str, latency: int, isolation: bool, reachable: bool, now: int) -> None: ...
    def is_available(self, broker: str, now: int) -> bool: ...
    def is_reachable(self, broker: str) -> bool: ...
    def remove(self, broker: str) -> None: ...
    def items(self) -> dict[str, tuple[int, int, bool, int]]: ...
    def pick_one_at_least_4x(self, now: int, which_item_worst: int) -> tuple[str | None, int]: ...
    def reachable_candidates(self) -> list[str]: ...
    def detect_round(self, now: int, resolve: dict[str, str | None], detect_ok: dict[str, bool]) -> None: ...
    def select_4x(
        self, publish_info: TopicPublishInfo, now: int, last_broker: str | None, counter: int, which_item_worst: int
    ) -> tuple[int, tuple[str, int] | None, int, int]: ...
    def select_5x(
        self, publish_info: TopicPublishInfo, now: int, last_broker: str | None, reset_to: int | None, counter: int
    ) -> tuple[int, int]: ...
    def simulate(
        self,
        publish_info: TopicPublishInfo,
        models: list[tuple[int, int, float]],
        *,
        sends: int,
        start_ms: int,
        interval_ms: int,
        retry_times: int,
        seed: int,
        send_which_queue: int,
        which_item_worst: int,
        failure_reachable: bool,
    ) -> dict[str, Any]: ...

@final
class TopicPartitionList:
    def __new__(cls, items: Iterable[tuple[str, int]]) -> TopicPartitionList: ...
    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: SupportsIndex, /) -> TopicPartition: ...
    @overload
    def __getitem__(self, index: slice, /) -> TopicPartitionList: ...
    def __iter__(self) -> Iterator[TopicPartition]: ...
    def __contains__(self, value: object, /) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def tolist(self) -> list[TopicPartition]: ...
    def by_topic(self) -> dict[str, list[int]]: ...

@final
class TopicPartitionListIterator:
    def __iter__(self) -> TopicPartitionListIterator: ...
    def __next__(self) -> TopicPartition: ...

def kafka_assign(name: str, topics: list[tuple[str, int]], members: list[Any]) -> list[TopicPartitionList]: ...
def kafka_assign_grouped(
    name: str,
    topics: list[tuple[str, int]] | Callable[[str], Any],
    members: list[Any],
) -> list[list[tuple[str, tuple[int, ...]]]]: ...
def kafka_assign_columns(
    name: str,
    topics: list[tuple[str, int]],
    member_ids: list[str],
    member_topics: list[list[str]],
    owned_member: npt.NDArray[np.uint32],
    owned_topic: npt.NDArray[np.uint32],
    owned_partition: npt.NDArray[np.uint32],
    generation: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32], npt.NDArray[np.uint32]]: ...
def zk_assign(
    name: str,
    topics: list[tuple[str, int]],
    consumers: list[tuple[str, list[tuple[int, int]]]],
    threads: list[str],
) -> list[TopicPartitionList]: ...
def sticky_user_data_encode(topics: list[str], partitions: list[int], generation: int | None) -> bytes: ...
def sticky_user_data_decode(data: bytes) -> tuple[list[tuple[str, int]], int | None] | None: ...
def owners_by_pair(
    topics: _StrColumn,
    brokers: _StrColumn,
    queue_ids: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.uint64],
    strategies: list[Strategy],
    seg_strategy: npt.NDArray[np.uint32],
    consumers: list[list[str]],
) -> npt.NDArray[np.int64]: ...
def owners_by_pair_in_column(
    topics: _StrColumn,
    brokers: _StrColumn,
    queue_ids: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.uint64],
    strategies: list[Strategy],
    seg_strategy: npt.NDArray[np.uint32],
    id_offsets: npt.NDArray[np.int64],
    id_data: npt.NDArray[np.uint8],
    id_starts: npt.NDArray[np.int64],
    id_stops: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]: ...
def distinct_ids(
    offsets: npt.NDArray[np.int64],
    data: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    stops: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]: ...
def key_order(keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint32]: ...
def json_keys(text: str) -> Literal["distinct", "duplicate", "unsure"]: ...

_StrParts = tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8], npt.NDArray[np.uint8], int]

def read_snapshot_json(
    text: bytes,
) -> (
    tuple[
        bytes,
        npt.NDArray[np.int64],
        _StrParts,
        _StrParts,
        _StrParts,
        tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8], int],
        npt.NDArray[np.int32],
        list[str],
    ]
    | None
): ...
def server_assign(
    name: str, members: Any, topics: dict[str, int], kafka_version: str
) -> dict[str, dict[str, list[int]]]: ...
def server_assign_columns(
    name: str,
    topic_ids: list[str],
    partition_counts: npt.NDArray[np.int64],
    member_ids: list[str],
    instance_ids: list[str | None] | None,
    member_subscription: npt.NDArray[np.int64] | None,
    subscription_offsets: npt.NDArray[np.int64],
    subscription_topics: npt.NDArray[np.int64],
    current_offsets: npt.NDArray[np.int64],
    current_topics: npt.NDArray[np.int64],
    current_partitions: npt.NDArray[np.int64],
    kafka_version: str,
) -> npt.NDArray[np.int32]: ...
def decode_offset_fetch(
    data: bytes, /, *, version: int
) -> tuple[
    int,
    list[str],
    npt.NDArray[np.int16],
    list[str],
    npt.NDArray[np.uint32],
    npt.NDArray[np.uint32],
    npt.NDArray[np.int32],
    npt.NDArray[np.int64],
    npt.NDArray[np.int32],
    npt.NDArray[np.int16],
]: ...
def crc32c(data: bytes | bytearray | memoryview, /) -> int: ...
