"""Golden vectors produced by the real Java RocketMQ client (5.3.3, identical on 4.9.8)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from mqbalance import MessageQueue, bulk, sort_client_ids, sort_queues
from vector_cases import build_strategy, check_allocate_case, load_vectors, mq

ALLOCATE = load_vectors("rocketmq/allocate.jsonl.gz")
RAW = load_vectors("rocketmq/allocate_raw.jsonl.gz")
SORT = load_vectors("rocketmq/sort.jsonl.gz")


@pytest.mark.parametrize("case", ALLOCATE, ids=[c["id"] for c in ALLOCATE])
def test_allocate_vectors(case: dict[str, Any]) -> None:
    check_allocate_case(case)


@pytest.mark.parametrize("case", RAW, ids=[c["id"] for c in RAW])
def test_allocate_raw_vectors(case: dict[str, Any]) -> None:
    check_allocate_case(case)


def _successful(case: dict[str, Any]) -> bool:
    return "constructorError" not in case and all(isinstance(v, list) for v in case["expected"].values())


WHOLE_GROUP = [c for c in ALLOCATE if _successful(c) and c["strategy"] != "CONFIG" and c["mqAll"]]


@pytest.mark.parametrize("case", WHOLE_GROUP, ids=[c["id"] for c in WHOLE_GROUP])
def test_assign_and_bulk_equal_per_client_vectors(case: dict[str, Any]) -> None:
    """The one-pass views agree with what every Java client computed for itself."""
    s = build_strategy(case["strategy"], case["params"])
    mq_all = [mq(q) for q in case["mqAll"]]
    cid_all = case["cidAll"]
    expected = case["expected"]
    assert s.assign(mq_all, cid_all) == {cid: [mq_all[i] for i in want] for cid, want in expected.items()}

    want_owner = np.full(len(mq_all), -1, dtype=np.int64)
    for cid, positions in expected.items():
        want_owner[positions] = cid_all.index(cid)
    cols = ([q.topic for q in mq_all], [q.broker_name for q in mq_all], [q.queue_id for q in mq_all])
    np.testing.assert_array_equal(bulk.owners(s, *cols, cid_all, presorted=True), want_owner)

    # The inputs are Java-sorted already: shuffled, the sorting path must find the same owners.
    rng = random.Random(case["id"])
    qperm = list(range(len(mq_all)))
    cperm = list(range(len(cid_all)))
    rng.shuffle(qperm)
    rng.shuffle(cperm)
    shuffled_ids = [cid_all[j] for j in cperm]
    got = bulk.owners(s, *([col[k] for k in qperm] for col in cols), shuffled_ids)
    want = [-1 if want_owner[k] < 0 else shuffled_ids.index(cid_all[want_owner[k]]) for k in qperm]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", SORT, ids=[c["id"] for c in SORT])
def test_sort_vectors(case: dict[str, Any]) -> None:
    assert sort_client_ids(case["cids"]) == case["cidsSorted"]
    assert sort_queues([mq(q) for q in case["mqs"]]) == [mq(q) for q in case["mqsSorted"]]
    assert sorted(mq(q) for q in case["mqs"]) == [mq(q) for q in case["mqsSorted"]]


def test_vectors_are_all_there() -> None:
    assert (len(ALLOCATE), len(RAW), len(SORT)) == (2000, 300, 250)
    assert isinstance(MessageQueue("t", "b", 0), MessageQueue)
