"""One test per error, checking the Python class, the message and the carried value; bad input
never crosses the FFI as a Rust panic."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import mqbalance
from mqbalance import (
    ConsumerIdcsNotSetError,
    EmptyConsumersError,
    EmptyCurrentIdError,
    EmptyQueuesError,
    IllegalArgumentError,
    InvalidClientIdError,
    InvalidInputError,
    InvalidQueueError,
    LengthMismatchError,
    MachineRoomError,
    MessageQueue,
    MQBalanceError,
    RingTooLargeError,
    UnknownCharsetError,
    UnknownStrategyError,
    UnsupportedStrategyError,
    VirtualNodeCountError,
    bulk,
    strategy,
)

Q = [MessageQueue("TopicTest", "broker-a", i) for i in range(4)]


def test_empty_current_id():
    for cid in (None, ""):
        with pytest.raises(EmptyCurrentIdError, match="^currentCID is empty$"):
            strategy("AVG").allocate("cg", cid, Q, ["a"])
    assert strategy("AVG").allocate("cg", " ", Q, [" "]) == Q  # whitespace is not empty (isEmpty)


def test_empty_queues_and_consumers():
    with pytest.raises(EmptyQueuesError, match="^mqAll is null or mqAll empty$"):
        strategy("AVG_BY_CIRCLE").allocate("cg", "a", None, ["a"])
    with pytest.raises(EmptyConsumersError, match="^cidAll is null or cidAll empty$"):
        strategy("CONSISTENT_HASH").allocate("cg", "a", Q, [])
    with pytest.raises(EmptyQueuesError):
        strategy("AVG").assign([], ["a"])


def test_error_hierarchy_and_pickle():
    with pytest.raises(ValueError) as info:
        strategy("AVG").allocate("cg", "a", [], ["a"])
    e = info.value
    assert isinstance(e, IllegalArgumentError) and isinstance(e, InvalidInputError) and isinstance(e, MQBalanceError)
    assert e.java_exception == "IllegalArgumentException"
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is EmptyQueuesError and str(back) == str(e)


def test_negative_virtual_node_count():
    with pytest.raises(VirtualNodeCountError, match="^illegal virtualNodeCnt :-3$") as info:
        strategy("CONSISTENT_HASH", virtual_node_cnt=-3)
    assert info.value.value == -3


def test_huge_virtual_node_counts():
    for v in (2**24, 2**31 - 1, 2**40, 10**30):
        with pytest.raises(RingTooLargeError):
            strategy("CONSISTENT_HASH", virtual_node_cnt=v).allocate("cg", "a", Q, ["a", "b"])
    with pytest.raises(VirtualNodeCountError):
        strategy("CONSISTENT_HASH", virtual_node_cnt=-(10**30))
    with pytest.raises(InvalidInputError):
        strategy("CONSISTENT_HASH", virtual_node_cnt=2.5)


def test_machine_room_idcs_not_set():
    qs = [MessageQueue("T", "hz@broker-a", 0)]
    with pytest.raises(ConsumerIdcsNotSetError) as info:
        strategy("MACHINE_ROOM").allocate("cg", "a", qs, ["a"])
    assert info.value.value == "hz@broker-a" and info.value.java_exception == "NullPointerException"
    # Not reached for non-members (check() first) nor for names that are not idc@name.
    assert strategy("MACHINE_ROOM").allocate("cg", "zz", qs, ["a"]) == []
    assert strategy("MACHINE_ROOM").allocate("cg", "a", [MessageQueue("T", "plain", 0)], ["a"]) == []


def test_machine_room_null_rooms():
    s = strategy("MACHINE_ROOM_NEARBY", inner=strategy("AVG"))
    with pytest.raises(
        MachineRoomError, match=r"^Machine room is null for mq MessageQueue \[topic=T, brokerName=@x, queueId=0\]$"
    ):
        s.allocate("cg", "hz@a", [MessageQueue("T", "@x", 0)], ["hz@a"])
    with pytest.raises(MachineRoomError, match="^Machine room is null for consumer id @c$"):
        s.allocate("cg", "hz@a", [MessageQueue("T", "hz@x", 0)], ["hz@a", "@c"])

    class NoneResolver:
        def broker_room(self, q):
            return None

        def consumer_room(self, c):
            return "hz"

    with pytest.raises(MachineRoomError):
        strategy("MACHINE_ROOM_NEARBY", inner=strategy("AVG"), resolver=NoneResolver()).allocate("cg", "a", Q, ["a"])


def test_unknown_and_unsupported_strategies():
    with pytest.raises(UnknownStrategyError) as info:
        strategy("RANDOM")
    assert isinstance(info.value, LookupError) and info.value.value == "RANDOM"
    with pytest.raises(UnsupportedStrategyError):
        strategy("MACHINE_ROOM_NEARBY", inner=strategy("CONFIG"))
    with pytest.raises(UnsupportedStrategyError):
        bulk.owners("CONFIG", ["T"], ["b"], [0], ["a"])
    with pytest.raises(InvalidInputError):
        strategy("MACHINE_ROOM_NEARBY")
    with pytest.raises(InvalidInputError):
        strategy("AVG", virtual_node_cnt=3)


def test_unknown_charset():
    with pytest.raises(UnknownCharsetError):
        strategy("CONSISTENT_HASH", charset="EBCDIC")


def test_invalid_queues():
    with pytest.raises(InvalidQueueError):
        MessageQueue("T", "b", 2**31)
    with pytest.raises(InvalidQueueError):
        MessageQueue("T", None, 0)  # type: ignore[arg-type]
    with pytest.raises(InvalidQueueError):
        MessageQueue("T", "b", True)
    with pytest.raises(InvalidQueueError) as info:
        strategy("AVG").allocate("cg", "a", [Q[0], None], ["a"])
    assert "queues[1]" in str(info.value)
    with pytest.raises(InvalidQueueError, match="lone surrogate"):
        strategy("CONSISTENT_HASH").allocate("cg", "a", [MessageQueue("T\ud800", "b", 0)], ["a"])
    assert MessageQueue("T", "b", -(2**31)).queue_id == -(2**31)


def test_invalid_client_ids():
    with pytest.raises(InvalidClientIdError, match=r"consumers\[1\] must be a str, got None"):
        strategy("AVG").allocate("cg", "a", Q, ["a", None])
    with pytest.raises(InvalidClientIdError, match=r"consumers\[0\] must be a str, got 7"):
        strategy("AVG").allocate("cg", "a", Q, [7])
    with pytest.raises(InvalidClientIdError, match="lone surrogate"):
        strategy("AVG").allocate("cg", "a", Q, ["a", "\udc00"])
    with pytest.raises(InvalidClientIdError):
        strategy("AVG").allocate("cg", "\udc00", Q, ["a"])
    with pytest.raises(InvalidClientIdError):
        strategy("AVG").allocate("cg", 42, Q, ["a"])  # type: ignore[arg-type]
    with pytest.raises(InvalidClientIdError):
        mqbalance.sort_client_ids("abc")


def test_bulk_bad_columns():
    with pytest.raises(LengthMismatchError):
        bulk.owners("AVG", ["T", "T"], ["b"], [0, 1], ["a"])
    with pytest.raises(InvalidQueueError, match=r"queue_ids\[1\] = 2147483648"):
        bulk.owners("AVG", ["T", "T"], ["b", "b"], np.array([0, 2**31]), ["a"])
    with pytest.raises(InvalidQueueError, match=r"queue_ids\[0\] = -2147483649"):
        bulk.owners("AVG", ["T"], ["b"], [-(2**31) - 1], ["a"])
    with pytest.raises(InvalidQueueError, match=r"queue_ids\[0\] = 18446744073709551615"):
        bulk.owners("AVG", ["T"], ["b"], np.array([2**64 - 1], dtype=np.uint64), ["a"])
    with pytest.raises(InvalidQueueError, match=r"queue_ids\[1\] must be an int"):
        bulk.owners("AVG", ["T", "T"], ["b", "b"], [0, 1.5], ["a"])
    with pytest.raises(InvalidQueueError, match=r"topics\[1\] must be a str, got None"):
        bulk.owners("CONSISTENT_HASH", ["T", None], ["b", "b"], [0, 1], ["a"])
    with pytest.raises(InvalidQueueError, match=r"brokers\[0\] must be a str"):
        bulk.owners("AVG", ["T"], [b"b"], [0], ["a"])
    import pyarrow as pa

    with pytest.raises(InvalidQueueError, match=r"topics\[1\] is null"):
        bulk.owners("AVG", pa.array(["T", None]), pa.array(["b", "b"]), pa.array([0, 1]), ["a"])


def test_empty_strings_are_ordinary_values():
    qs = [MessageQueue("", "", 0), MessageQueue("", "", 1)]
    assert strategy("CONSISTENT_HASH").assign(qs, ["x"]) == {"x": qs}
    with pytest.raises(EmptyCurrentIdError):
        strategy("AVG").assign(qs, ["", "x"])  # the "" member's own call throws in Java
    np.testing.assert_array_equal(bulk.owners("AVG", ["", ""], ["", ""], [0, 1], ["", "x"], presorted=True), [-1, 1])


@pytest.mark.slow
def test_million_element_inputs():
    n = 10**6
    topics = ["T"] * n
    brokers = [f"broker-{k % 7}" for k in range(n)]
    ids = np.arange(n) // 7
    owners = bulk.owners("AVG", topics, brokers, ids, [f"c{j}" for j in range(1000)])
    assert owners.shape == (n,) and owners.min() == 0 and owners.max() == 999
    counts = np.bincount(owners)
    assert counts.max() - counts.min() <= 1
    big_ids = [f"c{j}" for j in range(10**6)]
    owners = bulk.owners("AVG_BY_CIRCLE", topics[:10], brokers[:10], ids[:10], big_ids)
    assert len(set(owners.tolist())) == 10


def test_core_refuses_a_simulation_it_cannot_hold():
    """The core's fallible reservation (FaultError::TooLarge) arrives as ResourceLimitError, with the value."""
    from mqbalance import _core
    from mqbalance.exceptions import ResourceLimitError
    from mqbalance.fault import QueueData, TopicPublishInfo

    tp = TopicPublishInfo.from_route("t", [QueueData("a", 6, 2)])
    core = _core.MQFaultStrategy(
        "5.x",
        enabled=True,
        latency_max=None,
        not_available_duration=None,
        start_detector_enable=False,
        detect_interval=2000,
    )
    kwargs = {
        "start_ms": 0,
        "interval_ms": 0,
        "retry_times": 0,
        "seed": 0,
        "send_which_queue": 0,
        "which_item_worst": 0,
    }
    with pytest.raises(ResourceLimitError, match=r"^sends = 4611686018427387904 is too large") as info:
        core.simulate(tp._core, [(0, 0, 0.0)], sends=2**62, failure_reachable=True, **kwargs)
    assert info.value.value == 2**62


def test_python_refuses_a_count_beyond_the_memory_budget(monkeypatch):
    """Checked before allocating: the message names the parameter, its value and the memory."""
    from mqbalance.exceptions import ResourceLimitError
    from mqbalance.fault import BrokerModel, MQFaultStrategy, QueueData, TopicPublishInfo

    monkeypatch.setenv("MQBALANCE_MEMORY_BUDGET", str(1 << 20))
    tp = TopicPublishInfo.from_route("t", [QueueData("a", 6, 2)])
    with pytest.raises(ResourceLimitError, match=r"^sends = 1000000 would need about 38\.1 MiB of memory") as info:
        MQFaultStrategy().simulate(tp, {"a": BrokerModel(1)}, sends=10**6)
    assert info.value.value == 10**6
    with pytest.raises(ResourceLimitError, match="outside Java's int range"):
        MQFaultStrategy().simulate(tp, {"a": BrokerModel(1)}, sends=2**31)


def test_segment_bounds_say_what_is_wrong():
    """InvalidBounds: bounds that do not partition the rows, with a message that does not contradict itself."""
    with pytest.raises(InvalidInputError, match="^segment bounds must start at 0"):
        bulk.owners_by_pair(["A"] * 3, ["b"] * 3, [0, 1, 2], [1, 3], ["AVG"], [["x"]])
    with pytest.raises(InvalidInputError, match=r"^segment bounds must end at the number of rows 3, got 2"):
        bulk.owners_by_pair(["A"] * 3, ["b"] * 3, [0, 1, 2], [0, 2], ["AVG"], [["x"]])
    with pytest.raises(InvalidInputError, match=r"^segment bounds has 3 entries for 1 segments \(expected 2\)"):
        bulk.owners_by_pair(["A"] * 3, ["b"] * 3, [0, 1, 2], [0, 1, 3], ["AVG"], [["x"]])
