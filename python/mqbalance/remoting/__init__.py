"""A small client of RocketMQ's remoting protocol (name servers and brokers), written over the
documented frame format: :mod:`~mqbalance.remoting.frame` (pure codec),
:mod:`~mqbalance.remoting.client` (one connection, pipelined requests, server-initiated requests,
timeouts, reconnect), :mod:`~mqbalance.remoting.api` (typed requests).

>>> from mqbalance.remoting import RequestCode, RemotingCommand
>>> RemotingCommand(RequestCode.GET_BROKER_CLUSTER_INFO).is_response
False
"""

from mqbalance.exceptions import (
    BrokerResponseError,
    RemotingConnectError,
    RemotingError,
    RemotingFrameError,
    RemotingTimeoutError,
)
from mqbalance.remoting.api import (
    BrokerClient,
    BrokerData,
    ClientConnection,
    ClusterInfo,
    ConsumerConnectionInfo,
    ConsumerData,
    Message,
    NameServer,
    PullResult,
    PullStatus,
    QueueData,
    SendResult,
    TopicRoute,
    running_info_queues,
    strategy_from_running_info,
)
from mqbalance.remoting.client import AclCredentials, RemotingClient, RequestHandler
from mqbalance.remoting.codes import RequestCode, ResponseCode
from mqbalance.remoting.frame import MAX_FRAME_BYTES, RemotingCommand

__all__ = [
    "MAX_FRAME_BYTES",
    "AclCredentials",
    "BrokerClient",
    "BrokerData",
    "BrokerResponseError",
    "ClientConnection",
    "ClusterInfo",
    "ConsumerConnectionInfo",
    "ConsumerData",
    "Message",
    "NameServer",
    "PullResult",
    "PullStatus",
    "QueueData",
    "RemotingClient",
    "RemotingCommand",
    "RemotingConnectError",
    "RemotingError",
    "RemotingFrameError",
    "RemotingTimeoutError",
    "RequestCode",
    "RequestHandler",
    "ResponseCode",
    "SendResult",
    "TopicRoute",
    "running_info_queues",
    "strategy_from_running_info",
]
