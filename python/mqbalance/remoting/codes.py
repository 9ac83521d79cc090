"""The request and response codes of RocketMQ's remoting protocol that mqbalance uses, with the
numbers and names of ``RequestCode`` / ``ResponseCode`` in the Java sources.

>>> RequestCode(106).name, ResponseCode.TOPIC_NOT_EXIST.value
('GET_BROKER_CLUSTER_INFO', 17)
>>> code_name(ResponseCode, 17), code_name(ResponseCode, 9999)
('TOPIC_NOT_EXIST (17)', 'unknown code 9999')
"""

from __future__ import annotations

import enum

from mqbalance.exceptions import InvalidInputError

__all__ = ["LANGUAGE", "VERSION", "RequestCode", "ResponseCode", "code_name"]

#: what we send as ``language``: the Rust name server closes the connection on ``"PYTHON"``.
LANGUAGE = "JAVA"
#: ``version`` we send: ``MQVersion.Version.V5_3_0.ordinal()``. Name servers answer clients at
#: V4_9_4 (401) or later with standard JSON (older ones get integer map keys without quotes).
VERSION = 473


class RequestCode(enum.IntEnum):
    """``org.apache.rocketmq.remoting.protocol.RequestCode`` (the codes we send or receive)."""

    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    UPDATE_AND_CREATE_TOPIC_LIST = 18
    GET_ALL_TOPIC_CONFIG = 21
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    GET_CONSUMER_LIST_BY_GROUP = 38
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    GET_CONSUME_STATS = 208
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST = 225
    GET_CONSUMER_RUNNING_INFO = 307


class ResponseCode(enum.IntEnum):
    """``ResponseCode`` / ``RemotingSysResponseCode`` (the codes we act on or name in errors)."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208


def code_name(kind: type[enum.IntEnum], code: int) -> str:
    """``NAME (n)`` for a known code, ``unknown code n`` otherwise (servers may send codes newer
    than this list)."""
    if not (isinstance(kind, type) and issubclass(kind, enum.IntEnum)):
        raise InvalidInputError(f"kind must be an IntEnum class (RequestCode, ResponseCode), got {kind!r:.80}", kind)
    if isinstance(code, bool) or not isinstance(code, int):
        raise InvalidInputError(f"code must be an int, got {type(code).__name__} {code!r:.40}", code)
    try:
        return f"{kind(code).name} ({code})"
    except ValueError:
        return f"unknown code {code}"
