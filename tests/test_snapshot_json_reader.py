"""A JSON snapshot file is read by the Rust reader, its connections straight into columns (issue 36:
parsing a million connections into dicts was most of what ``mqbalance assign`` spent on them).
Whatever the text, ``load_snapshot`` gives what the reference path (``json`` + the dict checks)
gives: the same snapshot, or the same typed error naming the value — never a panic."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqbalance import _core
from mqbalance.exceptions import SnapshotError
from mqbalance.fleet.rocketmq import files
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict, snapshot_from_json_bytes
from test_snapshot_columns import _paths, fleet, same, small_fleet


def reference(path: Path) -> object:
    """What ``load_snapshot`` gives without the reader (the snapshot, or the error's message)."""
    with mock.patch.object(files, "snapshot_from_json_bytes", return_value=None):
        try:
            return files.load_snapshot(path)
        except SnapshotError as e:
            return f"{type(e).__name__}: {e}"


def loaded(path: Path) -> object:
    try:
        return files.load_snapshot(path)
    except SnapshotError as e:
        return f"{type(e).__name__}: {e}"


def assert_same_result(path: Path) -> None:
    expected, got = reference(path), loaded(path)
    if isinstance(expected, str):
        assert got == expected
    else:
        assert not isinstance(got, str), got
        same(got, expected)


def test_the_example_fleet_is_read_by_the_reader_as_by_json(tmp_path):
    data = fleet()
    first = next(iter(data["groups"].values()))
    # Per-connection strategies written in different spellings of the same configuration, and
    # fields the snapshot does not keep.
    first["connections"][1]["strategy"] = {"virtualNodeCnt": 5, "name": "CONSISTENT_HASH"}
    first["connections"][1]["extra"] = {"nested": [1, 2.5, None, True, "x"]}
    for indent in (None, 2):
        text = json.dumps(data, indent=indent, ensure_ascii=indent is None)
        assert snapshot_from_json_bytes(text.encode(), "f") is not None  # the reader's path is taken
        p = tmp_path / f"fleet-{indent}.json"
        p.write_text(text, encoding="utf-8")
        same(files.load_snapshot(p), snapshot_from_dict(json.loads(text), str(p)))


def test_the_columns_are_the_dicts_columns():
    text = json.dumps(fleet()).encode()
    read = _core.read_snapshot_json(text)
    assert read is not None
    skeleton, counts, *_ = read
    data = json.loads(skeleton)
    assert all(g["connections"] == [] for g in data["groups"].values())
    assert counts.tolist() == [len(g["connections"]) for g in fleet()["groups"].values()]
    got = snapshot_from_json_bytes(text, "s")
    assert got is not None
    assert got.connections.column("client_id").to_pylist() == [
        c["clientId"] for g in fleet()["groups"].values() for c in g["connections"]
    ]


#: Values a field may be set to (all JSON-serialisable): good ones and every kind of bad one.
ODD = st.sampled_from(
    [None, "", "x", "\ud800", 'é😀\n"', 0, -1, 2**31, 2**63, 1.0, 1.5, True, [], ["x"], {}, {"name": "AVG"}, "AVG"]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10_000), ODD), max_size=3), st.booleans(), st.booleans())
def test_any_mutation_gives_the_same_snapshot_or_the_same_error(tmp_path_factory, mutations, ascii_only, indent):
    data = small_fleet()
    paths = _paths(data)
    for at, value in mutations:
        container, key = paths[at % len(paths)]
        container[key] = copy.deepcopy(value)
    p = tmp_path_factory.mktemp("m") / "s.json"
    text = json.dumps(data, ensure_ascii=ascii_only, indent=2 if indent else None)
    p.write_bytes(text.encode("utf-8", "surrogatepass"))  # a raw lone surrogate: not UTF-8
    assert_same_result(p)


GOOD = json.dumps(small_fleet())


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param(GOOD[:-1], id="truncated"),
        pytest.param(GOOD + " x", id="trailing text"),
        pytest.param("\ufeff" + GOOD, id="BOM"),
        pytest.param(GOOD.replace('"version": 453', '"version": NaN'), id="NaN"),
        pytest.param(GOOD.replace('"version": 453', '"version": 453, "version": 454'), id="duplicate key"),
        pytest.param(GOOD.replace('"clientId": "a"', '"client\\u0049d": "a"'), id="escaped key"),
        pytest.param(GOOD.replace('"clientId": "a"', '"clientId": "a", "x": ' + "9" * 5000), id="5000 digits"),
        pytest.param(GOOD.replace('"clientId": "a"', '"clientId": "a", "x": ' + "[" * 3000 + "]" * 3000), id="deep"),
        pytest.param(GOOD.replace('"clientId": "a"', '"clientId": "a\\ud800"'), id="lone surrogate"),
        pytest.param(GOOD.replace('"clientId": "a"', '"clientId": "a\tb"'), id="control character"),
        pytest.param(GOOD.replace('"clientId": "a"', '"clientId": 7'), id="int id"),
        pytest.param(GOOD.replace('"clientId": "a"', '"clientId": ""'), id="empty id"),
        pytest.param(GOOD.replace('"version": 453', '"version": 4294967296'), id="version past int"),
        pytest.param(GOOD.replace('"version": 453', '"version": 1e3'), id="float version"),
        pytest.param(GOOD.replace('"version": 453', '"strategy": "NOPE"'), id="bad strategy"),
        pytest.param(GOOD.replace('"version": 453', '"strategy": null'), id="null strategy"),
        pytest.param(GOOD.replace('"connections": [{"clientId": "a"}]', '"connections": {}'), id="object list"),
        pytest.param(GOOD.replace('"connections": [{"clientId": "a"}]', '"connections": [[]]'), id="list entry"),
        pytest.param(GOOD.replace('"messageModel": "BROADCASTING"', '"consumeridcs": ["hz"]'), id="rooms"),
        pytest.param('{"topics": {}, "groups": []}', id="groups a list"),
        pytest.param('{"topics": {}}', id="no groups"),
        pytest.param("[]", id="a list"),
    ],
)
def test_malformed_or_odd_text_gives_the_reference_result(tmp_path, text):
    p = tmp_path / "s.json"
    p.write_text(text, encoding="utf-8")
    assert_same_result(p)


def test_malformed_text_is_a_typed_error_naming_the_file(tmp_path):
    for i, text in enumerate([GOOD[:-1], "\ufeff" + GOOD, GOOD.replace('"clientId": "a"', '"clientId": 7')]):
        p = tmp_path / f"s{i}.json"
        p.write_text(text, encoding="utf-8")
        with pytest.raises(SnapshotError, match=str(p).replace(".", r"\.")):
            files.load_snapshot(p)


def test_bytes_that_are_not_utf8_are_named_as_before(tmp_path):
    p = tmp_path / "s.json"
    p.write_bytes(GOOD.encode().replace(b'"a"', b'"\xff"'))
    assert _core.read_snapshot_json(p.read_bytes()) is None
    with pytest.raises(SnapshotError, match="not UTF-8 text"):
        files.load_snapshot(p)
