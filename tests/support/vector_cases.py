"""Golden-vector loading and strategy building from vector params (shared by tests)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from mqbalance import MessageQueue, StrategySpec

VECTORS = Path(__file__).parent.parent / "vectors"


def load_vectors(name: str) -> list[dict[str, Any]]:
    with gzip.open(VECTORS / name, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def mq(d: dict[str, Any]) -> MessageQueue:
    return MessageQueue(d["topic"], d["brokerName"], d["queueId"])


def build_strategy(name: str, params: dict[str, Any]):
    """The strategy a vector case describes (params use the Java field names)."""
    return StrategySpec.parse({"name": name, **params}).build()
