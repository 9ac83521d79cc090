"""Consumer groups that balance for real, across processes, through a real ZooKeeper.

``GroupMember(hosts, group, topics, *, client_id=None, strategy=..., mode="every-member"|"leader",
on_assigned=..., on_revoked=..., session_timeout=..., rebalance_max_retries=4,
rebalance_backoff_ms=2000, auth=None)`` — see :mod:`mqbalance.coordination.member` for how it is
built and :mod:`~mqbalance.coordination.every_member` / :mod:`~mqbalance.coordination.leader` for
the two protocols. ``set_partitions`` creates or changes a topic's partition node;
``group_status`` reads a group (members, owners, offsets, lag); ``ZooKeeperServer`` starts a
throwaway standalone server from the Debian jars.

Typical worker (the member process of ``mqbalance zk-consume`` is a full one)::

    with GroupMember("127.0.0.1:2181", "cg", ["orders"], strategy="CONSISTENT_HASH", mode="leader",
                     on_assigned=start_work, on_revoked=stop_work_and_commit) as member:
        member.wait_acquired(timeout=30)
        while running:
            for tp in member.assignment:
                if member.may_work(tp):
                    process(tp); member.commit(tp, next_offset)
"""

from mqbalance.coordination.assignment import group_assignment
from mqbalance.coordination.errors import (
    CommitFailedError,
    CoordinationAuthError,
    CoordinationError,
    DuplicateClientIdError,
    FencedCommitError,
    InvalidCoordinationConfigError,
    NoPartitionsError,
    RebalanceFailedError,
    ZooKeeperNotFoundError,
    ZooKeeperUnreachableError,
)
from mqbalance.coordination.layout import GroupPaths, MemberInfo, PublishedAssignment, set_partitions
from mqbalance.coordination.member import GroupMember
from mqbalance.coordination.session import LEASE_FRACTION
from mqbalance.coordination.states import MemberState, MemberStats, Mode, RevokeReason
from mqbalance.coordination.status import GroupStatus, group_status
from mqbalance.coordination.zkserver import ZooKeeperServer

__all__ = [
    "GroupMember",
    "Mode",
    "MemberState",
    "RevokeReason",
    "MemberStats",
    "LEASE_FRACTION",
    "set_partitions",
    "group_status",
    "GroupStatus",
    "GroupPaths",
    "MemberInfo",
    "PublishedAssignment",
    "group_assignment",
    "ZooKeeperServer",
    "CoordinationError",
    "InvalidCoordinationConfigError",
    "ZooKeeperUnreachableError",
    "ZooKeeperNotFoundError",
    "DuplicateClientIdError",
    "NoPartitionsError",
    "CoordinationAuthError",
    "CommitFailedError",
    "FencedCommitError",
    "RebalanceFailedError",
]
