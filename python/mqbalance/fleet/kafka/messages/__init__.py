"""Kafka protocol messages kafka-python 3.0 does not define, for the live snapshot
(:mod:`mqbalance.fleet.kafka.live`): ``ConsumerGroupDescribe`` (API key 69, KIP-848), the only
request that describes a group of the consumer protocol (DescribeGroups answers
``GROUP_ID_NOT_FOUND`` for it). Each message's schema is a JSON file beside this module, in the
layout of Kafka's message definitions, which kafka-python's protocol classes read.

>>> ConsumerGroupDescribeRequest.API_KEY, ConsumerGroupDescribeResponse.max_version
(69, 1)
"""

from __future__ import annotations

import sys

from kafka.protocol.api_message import ApiMessage

__all__ = ["ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse"]


class ConsumerGroupDescribeRequest(ApiMessage, load_json=sys.modules[__name__]):  # type: ignore[misc,call-arg]
    """Describe consumer-protocol groups: ``GroupIds``, ``IncludeAuthorizedOperations``."""


class ConsumerGroupDescribeResponse(ApiMessage, load_json=sys.modules[__name__]):  # type: ignore[misc,call-arg]
    """Per group: state, epochs, assignor, and per member its ids, epoch, subscribed topic names,
    current and target assignment (topic id, name, partitions)."""
