"""The leader mode (ours): one elected leader computes the whole group's assignment and publishes
it with a generation; every member applies it.

* **Election**: each member creates an ephemeral sequential ``leader/n_<seq>`` node; the lowest
  sequence leads, every other member watches only its predecessor (no herd when the leader goes).
* **Publishing** (leader only): the leader alone watches the members and the partition counts,
  computes the assignment in one call (``previous`` = the last generation, for ``STICKY`` and
  Kafka's ``sticky``) and writes it to ``assignment`` in one multi that checks its own election node —
  a deposed leader cannot overwrite its successor's generation.
* **Applying** (every member): watch the one ``assignment`` node; release only the partitions lost,
  then claim the ones gained in multis; a partition whose previous owner still holds it stays
  *pending* and is claimed when that owner node goes (a watch on it), instead of backing off.
  Partitions that stay keep being worked.

Example: ``m0`` (leader), ``m1``, ``m2`` own 10 of 30 partitions each with Kafka's ``sticky``; ``m3``
joins. The leader publishes generation g+1 in which ``m0``–``m2`` each hand over 2 or 3
partitions to ``m3``; they release exactly those, ``m3`` claims them (pending until released), and
the other 23 partitions are never paused.
"""

from __future__ import annotations

import logging

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from mqbalance.allocation.registry import StrategySpec
from mqbalance.coordination.assignment import group_assignment
from mqbalance.coordination.claims import CLAIM_BATCH, Claim, Claims
from mqbalance.coordination.layout import PublishedAssignment, encode_assignment, parse_assignment
from mqbalance.coordination.lifecycle import Event, Lifecycle
from mqbalance.coordination.session import CONNECTION_LOST, MemberSession
from mqbalance.coordination.states import MemberState, RevokeReason
from mqbalance.coordination.watches import Watches
from mqbalance.kafka import TopicPartition

__all__ = ["LeaderProtocol"]

log = logging.getLogger("mqbalance.coordination")

#: The events on which the leader computes the assignment again (besides a new session).
PUBLISH_ON = frozenset({"members", "partitions", "retry"})


class LeaderProtocol:
    """One member's side of the leader mode. ``generation`` is that of the assignment applied
    (-1 before the first, and again after a lost session, so the current one is applied anew)."""

    def __init__(
        self,
        session: MemberSession,
        watches: Watches,
        claims: Claims,
        lifecycle: Lifecycle,
        spec: StrategySpec,
        *,
        rebalance_backoff_ms: int,
    ) -> None:
        self._session, self._watches, self._claims, self._life = session, watches, claims, lifecycle
        self._spec, self._backoff_ms = spec, rebalance_backoff_ms
        self._name = session.client_id
        self.generation = -1
        self.is_leader = False
        self.election_node: str | None = None
        self._assignment: PublishedAssignment | None = None
        self._assignment_version = -1

    def handle(self, kinds: set[str], events: list[Event], *, new_session: bool) -> None:
        if new_session:
            self._read_assignment()
            self._elect()
        elif "election" in kinds:
            self._elect()
        if self.is_leader and (kinds & PUBLISH_ON or new_session):
            for e in events:
                if e[0] == "partitions":
                    self._watches.forget_partitions(e[1])
            self._publish()
        if kinds & {"assignment", "retry"}:
            self._read_assignment()
        if kinds & {"freed", "retry"}:  # with nothing pending, this only says so (ACQUIRED): a release the
            self._claim_pending()  # connection cut off would otherwise leave the member REBALANCING for good

    def rewatch(self, kinds: set[str]) -> None:
        """After a dropped connection (watches lost): read again everything watched."""
        kinds |= {"members", "assignment", "election", "freed"}

    def session_lost(self) -> None:
        self.generation = -1  # re-apply the current assignment with the new session
        self.election_node = None
        self.is_leader = False

    # ------------------------------------------------------------------ election
    def _elect(self) -> None:
        session = self._session
        c, paths = session.client, session.paths
        if self.election_node is None:
            session.stats.count()
            self.election_node = c.create(
                f"{paths.leader}/n_", self._name.encode(), acl=session.acl, ephemeral=True, sequence=True
            )
        mine = self.election_node.rsplit("/", 1)[1]
        while True:
            session.stats.count()
            children = sorted(c.get_children(paths.leader), key=lambda n: n.rsplit("_", 1)[-1])
            if mine not in children:
                self.election_node = None
                return self._elect()
            i = children.index(mine)
            if i == 0:
                if not self.is_leader:
                    self.is_leader = True
                    self._watches.forget()
                    log.info("%s: elected leader of %s", self._name, paths.group)
                    self._publish()
                return None
            session.stats.count()
            if c.exists(f"{paths.leader}/{children[i - 1]}", watch=self._watches.watcher("election", ("election",))):
                return None

    # ------------------------------------------------------------------ publishing (the leader)
    def _publish(self) -> None:
        session = self._session
        assert self.election_node is not None
        for _ in range(5):
            members = self._watches.read_members(cached=True)
            topics = {t for m in members.values() for t in m.subscription}
            partitions = self._watches.read_partitions(topics, cached=True)
            prev = self._assignment
            owners = group_assignment(
                self._spec,
                members,
                partitions,
                previous=prev.owners if prev else None,
                generation=prev.generation if prev else None,
            )
            if prev is not None and dict(prev.owners) == owners:
                return
            new = PublishedAssignment((prev.generation if prev else 0) + 1, self._name, self._spec.display_name, owners)
            tx = session.client.transaction()
            tx.check(self.election_node, 0)
            tx.set_data(session.paths.assignment, encode_assignment(new), self._assignment_version)
            session.stats.count(2)
            result = self._claims.commit_tx(tx)
            if not any(isinstance(r, Exception) for r in result):
                self._assignment_version = result[1].version
                session.stats.bump("published")
                self._apply(new)
                return
            if isinstance(result[0], NoNodeError | BadVersionError):  # the check failed: our election node is gone
                log.warning("%s: lost leadership while publishing", self._name)
                self.is_leader = False
                self._elect()  # run again (a new node, if ours went), so that the group is never left without a leader
                return
            # The write failed (the check's result is then only "rolled back"): the node moved since
            # we read it — another leader's generation, or our own publish whose answer was lost.
            log.info("%s: %s moved since version %d (%s); reading it again", self._name,
                     session.paths.assignment, self._assignment_version, type(result[1]).__name__)  # fmt: skip
            self._read_assignment()
        log.warning("%s: could not publish after 5 attempts; retrying later", self._name)
        self._life.retry_in(max(self._backoff_ms, 100) / 1000)

    # ------------------------------------------------------------------ applying (every member)
    def _read_assignment(self) -> None:
        session = self._session
        path = session.paths.assignment
        session.stats.count()
        try:
            raw, stat = session.client.get(path, watch=self._watches.watcher("assignment", ("assignment",)))
        except NoNodeError:
            return
        self._assignment_version = stat.version
        a = parse_assignment(raw, path)
        if a is not None and a.generation > self.generation:
            self._apply(a)
        elif a is None and self.is_leader and raw:
            self._assignment = None  # malformed: the leader writes a fresh one
            self._publish()

    def _apply(self, a: PublishedAssignment) -> None:
        claims = self._claims
        self._assignment = a
        self.generation = a.generation
        self._session.stats.bump("rebalances")
        mine = a.of(self._name)
        with claims.lock:
            lost = [tp for tp, cl in claims.owned.items() if mine.get(tp) != cl.thread]
            for tp in [tp for tp in claims.pending if tp not in mine]:
                del claims.pending[tp]
        if lost:
            self._life.set_state(MemberState.REBALANCING)
            claims.revoke(lost, RevokeReason.REBALANCE, release=True)
        with claims.lock:
            for tp, thread in mine.items():
                if tp not in claims.owned:
                    claims.pending[tp] = thread
        self._claim_pending()

    def _claim_pending(self) -> None:
        claims, session = self._claims, self._session
        with claims.lock:
            batch = dict(claims.pending)
        if not batch:
            self._life.set_state(MemberState.ACQUIRED)
            return
        self._life.set_state(MemberState.REBALANCING)
        claimed: dict[TopicPartition, Claim] = {}
        offsets = claims.read_offsets(batch)
        items = sorted(batch.items())
        for i in range(0, len(items), CLAIM_BATCH):
            chunk = dict(items[i : i + CLAIM_BATCH])
            for _ in range(4):
                if not chunk:
                    break
                tx = session.client.transaction()
                order = list(chunk.items())
                for tp, thread in order:
                    claims.claim_ops(tx, tp, thread, *offsets[tp])
                session.stats.count(2 * len(order))
                try:
                    result = claims.commit_tx(tx)
                except CONNECTION_LOST:
                    claims.interrupted([*claimed, *chunk])
                    raise
                if not any(isinstance(r, Exception) for r in result):
                    for k, (tp, thread) in enumerate(order):
                        claimed[tp] = claims.new_claim(tp, thread, *offsets[tp], result[2 * k + 1])
                    break
                stale = []
                for k, (tp, _) in enumerate(order):
                    own, off = result[2 * k], result[2 * k + 1]
                    if isinstance(own, NodeExistsError):  # the previous owner still holds it: wait for it
                        session.stats.bump("conflicts")
                        del chunk[tp]
                        claims.drop_own_leftover(tp)  # unless it is our own unanswered claim: freed now
                        session.stats.count()
                        freed = self._watches.watcher(("freed", tp), ("freed", tp))
                        if session.client.exists(session.paths.owner(*tp), watch=freed) is None:
                            self._life.events.put(("freed", tp))
                    elif isinstance(off, BadVersionError | NodeExistsError | NoNodeError):
                        stale.append(tp)
                if stale:
                    offsets.update(claims.read_offsets(stale))
        orphans = []
        with claims.lock:
            for tp, cl in list(claimed.items()):
                if claims.pending.get(tp) == cl.thread:
                    del claims.pending[tp]
                    claims.owned[tp] = cl
                else:  # reassigned while we claimed it
                    orphans.append(tp)
                    del claimed[tp]
            done = not claims.pending
        if orphans:
            claims.release(orphans)
        session.stats.bump("claimed", len(claimed))
        if claimed:
            self._life.assigned({tp: cl.offset for tp, cl in claimed.items()})
        if done:
            self._life.set_state(MemberState.ACQUIRED)
        elif self._life.retry_at is None:  # a safety net besides the watches
            self._life.retry_in(max(session.session_timeout, 1.0))
