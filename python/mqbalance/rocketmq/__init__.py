"""Consumer-group members on a real RocketMQ cluster: our rebalance state machines
(:mod:`mqbalance.rebalance`, 4.x or 5.x semantics, any strategy of the registry) driven by a real
clock over RocketMQ's own remoting protocol (:mod:`mqbalance.remoting`).

:class:`RocketMQMember` (:mod:`.member`) is the member; :class:`ClusterTransport` (:mod:`.transport`)
its link to the name servers and brokers; :mod:`.worker` the runnable form behind ``mqbalance
consume`` (:mod:`.cli`), which records what it processed; :mod:`.records` checks those records —
the same layout as :mod:`mqbalance.coordination` (``member``, ``worker``, ``records``, ``cli``).
"""

from mqbalance.rocketmq.member import MemberState, MemberStats, RocketMQMember, default_client_id
from mqbalance.rocketmq.records import RecordCheck, check_records, load_records
from mqbalance.rocketmq.transport import ClusterTransport, DuplicateClientId, PulledMessage

__all__ = [
    "RocketMQMember",
    "MemberState",
    "MemberStats",
    "DuplicateClientId",
    "default_client_id",
    "ClusterTransport",
    "PulledMessage",
    "RecordCheck",
    "check_records",
    "load_records",
]
