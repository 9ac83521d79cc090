"""Recompute the expected answers of the golden vectors from the Java jars of the harness
(``tests/java``, built by ``make java``): ``make vectors``.

Each case keeps its inputs (generated once with the seeds the READMEs record) and gets its answer
again from the oracle JVMs (``tests/support/java_oracle.py``): ``rocketmq/allocate``,
``allocate_raw`` and ``sort`` from RocketMQ 5.3.3 (and checked against 4.9.8: both must agree), and
``kafka/range``, ``roundrobin``, ``server_uniform`` and ``server_range`` from Kafka 4.4.0,
``kafka/zk_range`` and ``zk_roundrobin`` from Kafka 0.10.2.2. A file
whose answers all come back the same is rewritten (its decompressed bytes unchanged); a file with
different answers is left alone and its differing case ids are listed, unless ``--accept`` is given.
``--check`` only compares. Exit status 1 when answers differ and were not accepted.

Not regenerated: ``rocketmq/fault.jsonl`` (the traces need the fault classes' wall-clock reads
redirected to a settable clock and a seeded shuffle: a change inside RocketMQ's classes, not a
call of them) and ``kafka/sticky.jsonl`` (its reference output depends on ``HashMap`` tie-breaks and
kafka-python's output, and is compared by properties only). ``kafka/zk_*.jsonl`` come from Kafka
0.10.2.2's Scala assignors on a real ZooKeeper (module ``kafka-zk``); the cases whose consumer ids
ZooKeeper refuses (supplementary characters) keep their shipped answers.

Example:
    python tests/vectors/regenerate.py --check
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))

from java_oracle import JavaOracle  # noqa: E402

Case = dict[str, Any]


def allocate_request(case: Case) -> Case:
    request = {"op": "allocate", **{k: case[k] for k in ("strategy", "params", "consumerGroup", "mqAll", "cidAll")}}
    if "expected" in case:
        request["calls"] = list(case["expected"])
    if "probes" in case:
        request["probes"] = [{"currentCID": p["currentCID"]} for p in case["probes"]]
    return request


def sort_request(case: Case) -> Case:
    return {"op": "sort", "mqs": case["mqs"], "cids": case["cids"]}


def client_request(case: Case) -> Case:
    return {"op": "assign", "assignor": case["assignor"], "topics": case["topics"], "members": case["members"]}


def server_request(case: Case) -> Case:
    return {**client_request(case), "op": "server_assign"}


def zk_request(case: Case) -> Case:
    return {"op": "zk_assign", **{k: case[k] for k in ("assignor", "group", "topics", "consumers")}}


#: file -> (oracle modules, request builder, answer fields)
FILES: dict[str, tuple[tuple[str, ...], Callable[[Case], Case], tuple[str, ...]]] = {
    "rocketmq/allocate.jsonl.gz": (
        ("rocketmq5", "rocketmq4"),
        allocate_request,
        ("strategyName", "expected", "probes", "constructorError"),
    ),
    "rocketmq/allocate_raw.jsonl.gz": (
        ("rocketmq5", "rocketmq4"),
        allocate_request,
        ("strategyName", "expected", "probes", "constructorError"),
    ),
    "rocketmq/sort.jsonl.gz": (("rocketmq5", "rocketmq4"), sort_request, ("mqsSorted", "cidsSorted")),
    "kafka/range.jsonl.gz": (("kafka",), client_request, ("expected",)),
    "kafka/roundrobin.jsonl.gz": (("kafka",), client_request, ("expected",)),
    "kafka/server_uniform.jsonl.gz": (("kafka",), server_request, ("expected", "error")),
    "kafka/server_range.jsonl.gz": (("kafka",), server_request, ("expected", "error")),
    "kafka/zk_range.jsonl.gz": (("kafka-zk",), zk_request, ("expected_owners",)),
    "kafka/zk_roundrobin.jsonl.gz": (("kafka-zk",), zk_request, ("expected_owners",)),
}
MAIN_CLASS = {
    "rocketmq5": "RocketmqOracle",
    "rocketmq4": "RocketmqOracle",
    "kafka": "KafkaOracle",
    "kafka-zk": "ZkOracle",
}
#: what the ZooKeeper-era oracle answers when ZooKeeper refuses a consumer id (a character ZooKeeper
#: does not allow in a path): the case cannot run on a real ZooKeeper and keeps its shipped answer
ZK_REFUSED = "ZooKeeper refused the registration"


def _style(line: str) -> dict[str, Any]:
    """How the file's JSON was written (separators, escaping), so unchanged answers give unchanged bytes."""
    separators = (", ", ": ") if line.startswith('{"id": ') else (",", ":")
    return {"separators": separators, "ensure_ascii": False}


def _answer(reply: Case, fields: tuple[str, ...]) -> Case | None:
    """The answer fields of a reply; None when ZooKeeper refused the case's ids."""
    assert "badRequest" not in reply, reply
    if str(reply.get("exception", "")).startswith(ZK_REFUSED):
        return None
    return {k: reply[k] for k in fields if k in reply}


def regenerate(name: str, oracles: dict[str, JavaOracle]) -> tuple[str, list[str], bool, int]:
    """The regenerated text of ``name``, the ids whose answer changed, whether the text is
    byte-identical to the shipped one, and how many cases kept their answer because ZooKeeper
    refused their ids."""
    modules, request, fields = FILES[name]
    with gzip.open(HERE / name, "rt", encoding="utf-8") as f:
        shipped = f.read()
    lines = shipped.splitlines()
    cases = [json.loads(line) for line in lines]
    answers = [[_answer(r, fields) for r in oracles[m].ask([request(c) for c in cases])] for m in modules]
    for module, other in zip(modules[1:], answers[1:]):
        split = [c["id"] for c, a, b in zip(cases, answers[0], other) if a != b]
        if split:
            raise SystemExit(f"{name}: {modules[0]} and {module} disagree on {len(split)} cases: {split[:10]}")
    style = _style(lines[0])
    out, changed, kept = [], [], 0
    for case, reply in zip(cases, answers[0]):
        old = {k: case[k] for k in fields if k in case}
        answer = old if reply is None else reply
        kept += reply is None
        if old != answer:
            changed.append(case["id"])
        merged = {k: v for k, v in case.items() if k not in fields or k in answer}
        merged.update(answer)  # answers keep their place; a new answer field goes last
        out.append(json.dumps(merged, **style))
    text = "\n".join(out) + ("\n" if shipped.endswith("\n") else "")
    return text, changed, text == shipped, kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare only, write nothing")
    parser.add_argument("--accept", action="store_true", help="write files whose answers changed too")
    parser.add_argument("files", nargs="*", default=list(FILES), help="vector files (default: all regenerable)")
    args = parser.parse_args(argv)
    unknown = [f for f in args.files if f not in FILES]
    if unknown:
        parser.error(f"not regenerable: {', '.join(unknown)} (regenerable: {', '.join(FILES)})")
    needed = {m for f in args.files for m in FILES[f][0]}
    log_dir = Path(tempfile.mkdtemp(prefix="mqbalance-vectors-"))
    oracles = {m: JavaOracle(m, f"io.mqbalance.harness.{MAIN_CLASS[m]}", log=log_dir / f"{m}.log") for m in needed}
    status = 0
    try:
        for oracle in oracles.values():
            oracle.start()
            print(f"{oracle.server.name}: {oracle.version}, answering after {oracle.started_in_s:.2f} s")
        for name in args.files:
            text, changed, identical, kept = regenerate(name, oracles)
            verdict = "byte-identical" if identical else f"{len(changed)} answers differ" if changed else "same answers"
            if kept:
                verdict += f" ({kept} kept as shipped: ZooKeeper refuses their consumer ids)"
            listed = f": {', '.join(changed[:8])}..." if changed else ""
            print(f"{name}: {text.count(chr(10))} cases, {verdict}{listed}")
            if changed and not args.accept:
                status = 1
                continue
            if not args.check and not identical:
                with gzip.GzipFile(HERE / name, "wb", mtime=0) as f:
                    f.write(text.encode())
    finally:
        for oracle in oracles.values():
            oracle.close()
    return status


if __name__ == "__main__":
    sys.exit(main())
