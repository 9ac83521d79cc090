"""The every-member mode: Kafka 0.8's ``ZookeeperConsumerConnector`` protocol, faithfully.

Each member registered its ephemeral ``ids/<client_id>`` node with the subscription. Three
listeners — new session, partition count change, member change — funnel into one rebalance that:

1. stops work (``on_revoked`` with everything held, Kafka's ``beforeReleasingPartitions``) and
   deletes its owner nodes one by one;
2. reads every member and the partition counts and computes its own share;
3. reads the committed offsets and claims each partition with an ephemeral ``owners/<topic>/<p>``
   node (one multi per partition, see :mod:`~mqbalance.coordination.claims`);
4. on a conflict (the previous owner has not released yet) releases what this attempt claimed,
   backs off ``rebalance_backoff_ms`` and retries, up to ``rebalance_max_retries`` attempts; after
   the last one the member is FAILED and tries again ``rebalance_backoff_ms`` later.

Every member wakes on every change (the herd) and decides alone, so split decisions show up as
conflicts. Members ``a`` and ``b`` over 4 partitions with ``AVG``: both own 2; ``c`` joins, all
three stop everything, then ``a`` claims 0–1, ``b`` 2, ``c`` 3 — whoever reads the new member list
late claims a partition its new owner wanted, and both retry.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Mapping

from mqbalance.allocation.registry import StrategySpec
from mqbalance.coordination.assignment import group_assignment
from mqbalance.coordination.claims import Claim, Claims
from mqbalance.coordination.layout import MemberInfo
from mqbalance.coordination.lifecycle import Event, Lifecycle
from mqbalance.coordination.session import CONNECTION_LOST, MemberSession
from mqbalance.coordination.states import MemberState, RevokeReason
from mqbalance.coordination.watches import Watches
from mqbalance.kafka import TopicPartition

__all__ = ["EveryMemberProtocol"]

log = logging.getLogger("mqbalance.coordination")

#: The events that start a rebalance (besides a new session): a change, or a retry of work the
#: connection cut short (a retry finds the member ACQUIRED when what was cut short was only the
#: check after a reconnection, :meth:`EveryMemberProtocol.rewatch`: then it rebalances only if
#: this member's share changed).
REBALANCE_ON = frozenset({"members", "partitions", "retry"})


class EveryMemberProtocol:
    """One member's side of the every-member protocol. ``generation`` counts the rebalances it
    completed (-1 before the first, and again after a lost session)."""

    election_node: str | None = None  # no election in this mode
    is_leader = False

    def __init__(
        self,
        session: MemberSession,
        watches: Watches,
        claims: Claims,
        lifecycle: Lifecycle,
        spec: StrategySpec,
        subscription: Mapping[str, int],
        *,
        rebalance_max_retries: int,
        rebalance_backoff_ms: int,
    ) -> None:
        self._session, self._watches, self._claims, self._life = session, watches, claims, lifecycle
        self._spec, self._subscription = spec, subscription
        self._max_retries, self._backoff_ms = rebalance_max_retries, rebalance_backoff_ms
        self._name = session.client_id
        self.generation = -1

    def handle(self, kinds: set[str], events: list[Event], *, new_session: bool) -> None:
        changed = new_session or bool(kinds & (REBALANCE_ON - {"retry"}))
        if changed or "retry" in kinds and (self._life.state is not MemberState.ACQUIRED or self._share_changed()):
            self._synced_rebalance()

    def rewatch(self, kinds: set[str]) -> None:
        """After a dropped connection (watches lost): read members and partitions again, watching
        them, and rebalance only if this member's share changed meanwhile."""
        if not kinds & REBALANCE_ON and self._share_changed():
            kinds.add("members")

    def session_lost(self) -> None:
        self.generation = -1

    def _synced_rebalance(self) -> None:
        for attempt in range(self._max_retries):
            if attempt:
                self._session.stats.bump("retries")
                if self._life.stop.wait(self._backoff_ms / 1000) or not self._session.connected:
                    return
                while True:  # events seen before this attempt are covered by it
                    try:
                        e = self._life.events.get_nowait()
                    except queue.Empty:
                        break
                    if e[0] in ("stop", "lost", "suspended", "connected"):
                        self._life.events.put(e)
                        return
            if self._rebalance_once():
                self._life.retry_at = None
                return
        log.warning(
            "%s: rebalance failed after %d attempts; retrying in %d ms",
            self._name,
            self._max_retries,
            self._backoff_ms,
        )
        self._life.set_state(MemberState.FAILED)
        self._life.retry_in(self._backoff_ms / 1000)

    def _rebalance_once(self) -> bool:
        claims, session = self._claims, self._session
        self._life.set_state(MemberState.REBALANCING)
        session.stats.bump("rebalances")
        if claims.owned:
            claims.revoke(list(claims.owned), RevokeReason.REBALANCE, release=True)
        members = self._watches.read_members(cached=False)
        if self._name not in members:
            log.warning("%s: own registration missing from %s; registering again", self._name, session.paths.ids)
            session.register()
            return False
        mine = self._share(members, self._watches.read_partitions(self._subscription, cached=False))
        offsets = claims.read_offsets(mine)
        claimed: dict[TopicPartition, Claim] = {}
        for tp, thread in mine.items():
            raw, version = offsets[tp]
            tx = session.client.transaction()
            claims.claim_ops(tx, tp, thread, raw, version)
            session.stats.count(2)
            try:
                result = claims.commit_tx(tx)
            except CONNECTION_LOST:
                claims.interrupted([*claimed, tp])
                raise
            if any(isinstance(r, Exception) for r in result):
                session.stats.bump("conflicts")
                log.info("%s: conflict claiming %s/%s; releasing %d claimed", self._name, *tp, len(claimed))
                claims.release(claimed)  # Kafka: remove all paths that we have owned in ZK
                claims.drop_own_leftover(tp)  # the conflict may be with our own unanswered claim
                return False
            claimed[tp] = claims.new_claim(tp, thread, raw, version, result[1])
        with claims.lock:
            claims.owned = claimed
        self.generation += 1
        session.stats.bump("claimed", len(claimed))
        self._life.set_state(MemberState.ACQUIRED)
        self._life.assigned({tp: c.offset for tp, c in claimed.items()})
        return True

    def _share_changed(self) -> bool:
        """Read the members and partitions (watching them again) and tell whether this member's
        share differs from what it owns."""
        members = self._watches.read_members(cached=False)
        if self._name not in members:
            return True
        mine = self._share(members, self._watches.read_partitions(self._subscription, cached=False))
        return mine.keys() != self._claims.owned.keys()

    def _share(
        self, members: dict[str, MemberInfo], partitions: dict[str, dict[int, int]]
    ) -> dict[TopicPartition, str]:
        """This member's partitions (and consumer thread of each) by the strategy."""
        owners = group_assignment(self._spec, members, partitions)
        return {tp: th for tp, (m, th) in sorted(owners.items()) if m == self._name}
