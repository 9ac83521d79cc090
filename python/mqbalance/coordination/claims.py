"""Ownership: the partitions a member owns (its ephemeral ``owners/<topic>/<p>`` nodes), claiming
and releasing them, and fenced offset commits.

A claim is one multi that creates the owner node and, in the same transaction, sets the offset
node to its own value — which bumps the offset node's version. That version is the fencing token:
:meth:`Claims.commit` is one multi that checks the owner node and sets the offset *at the version
this member last wrote*. Worked example, partition ``t/0``:

1. member A claims it: owner node created, offset node ``"40"`` goes from version 3 to 4;
2. A commits 50 at version 4 → version 5;
3. A is paused past its session timeout; its owner node expires; B claims ``t/0`` → version 6;
4. A wakes and commits 60 at version 5: the multi fails (``FencedCommitError``), nothing is
   written, B's progress stands.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import NoAuthError, NoNodeError

from mqbalance.coordination.lifecycle import Lifecycle
from mqbalance.coordination.session import CONNECTION_LOST, MemberSession
from mqbalance.coordination.states import RevokeReason
from mqbalance.exceptions import CommitFailedError, CoordinationAuthError, FencedCommitError, InvalidInputError
from mqbalance.kafka import TopicPartition

__all__ = ["CLAIM_BATCH", "Claim", "Claims"]

log = logging.getLogger("mqbalance.coordination")

#: Owner nodes created or deleted per multi.
CLAIM_BATCH = 128

#: ``{TopicPartition: (raw offset node data, its version)}``; ``(None, None)``: no offset node yet.
Offsets = dict[TopicPartition, tuple[bytes | None, int | None]]


@dataclass
class Claim:
    """One owned partition."""

    thread: str  # the consumer thread written in the owner node
    offset: int  # committed offset, as last read or written by this member
    offset_version: int  # version of the offset node after our claim / last commit (the fencing token)
    owner_version: int = 0


class Claims:
    """What one member owns (``owned``), is releasing (``revoking``: still committable inside
    ``on_revoked``), in leader mode was assigned but has not claimed yet (``pending``: the previous
    owner still holds it), and has released without an answer yet (``unreleased``, see
    :meth:`release`). ``lock`` guards the four; ``commit_lock`` orders commits and releases.
    ``one_by_one``: release with one delete per node, as Kafka's consumer does (otherwise in multis
    of :data:`CLAIM_BATCH`)."""

    def __init__(self, session: MemberSession, lifecycle: Lifecycle, *, one_by_one: bool) -> None:
        self._session, self._lifecycle, self._one_by_one = session, lifecycle, one_by_one
        self._name = session.client_id
        self.lock = threading.RLock()
        self.commit_lock = threading.Lock()
        self.owned: dict[TopicPartition, Claim] = {}
        self.revoking: dict[TopicPartition, Claim] = {}
        self.pending: dict[TopicPartition, str] = {}
        self.unreleased: set[TopicPartition] = set()  # maybe held by this session, not counted as owned

    def owns(self, tp: TopicPartition | None) -> bool:
        """Owns ``tp`` (anything, when ``None``)."""
        with self.lock:
            return (tp in self.owned) if tp is not None else bool(self.owned)

    def committed(self, tp: TopicPartition) -> int | None:
        with self.lock:
            c = self.owned.get(tp) or self.revoking.get(tp)
            return c.offset if c else None

    # ------------------------------------------------------------------ fenced commits
    def commit(self, tp: TopicPartition, offset: int) -> int:
        """Commit ``offset`` for ``tp``, fenced (see the module); returns the offset node's new version."""
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise InvalidInputError(f"offset must be an int >= 0, got {offset!r}", offset)
        tp = TopicPartition(*tp)
        paths = self._session.paths
        with self.commit_lock:
            with self.lock:
                claim = self.owned.get(tp) or self.revoking.get(tp)
            if claim is None:
                raise FencedCommitError(f"{self._name} does not own {tp.topic}/{tp.partition}", tp)
            if offset < claim.offset:
                raise InvalidInputError(
                    f"commit of {tp.topic}/{tp.partition} would go backwards: {offset} < {claim.offset}", offset
                )
            if offset == claim.offset:
                return claim.offset_version
            tx = self._session.client.transaction()
            tx.check(paths.owner(tp.topic, tp.partition), claim.owner_version)
            tx.set_data(paths.offset(tp.topic, tp.partition), str(offset).encode(), claim.offset_version)
            self._session.stats.bump("commits")
            try:
                result = tx.commit()
            except CONNECTION_LOST as e:
                raise CommitFailedError(f"commit of {tp.topic}/{tp.partition} failed: {type(e).__name__}", tp) from e
            if any(isinstance(r, Exception) for r in result):
                self._session.stats.bump("fenced_commits")
                why = type(result[0] if isinstance(result[0], Exception) else result[1]).__name__
                raise FencedCommitError(
                    f"commit of {tp.topic}/{tp.partition} by {self._name} fenced ({why}): "
                    "another member owns it or claimed it since",
                    tp,
                )
            claim.offset = offset
            claim.offset_version = result[1].version
            return int(result[1].version)

    # ------------------------------------------------------------------ claiming
    def read_offsets(self, tps: Iterable[TopicPartition]) -> Offsets:
        """The offset nodes of ``tps``, read in one pipelined batch."""
        c, paths = self._session.client, self._session.paths
        asyncs = [(tp, c.get_async(paths.offset(*tp))) for tp in tps]
        out: Offsets = {}
        for tp, a in asyncs:
            self._session.stats.count()
            try:
                raw, stat = a.get()
                out[tp] = (raw, stat.version)
            except NoNodeError:
                out[tp] = (None, None)
        return out

    def claim_ops(self, tx: Any, tp: TopicPartition, thread: str, raw: bytes | None, version: int | None) -> None:
        """Add the two operations of a claim to ``tx``: create the owner node and bump the offset
        node's version (same value) — any commit based on an older version, a zombie's, fails from now on."""
        paths, acl = self._session.paths, self._session.acl
        tx.create(paths.owner(*tp), thread.encode(), acl=acl, ephemeral=True)
        if version is None:
            tx.create(paths.offset(*tp), b"0", acl=acl)
        else:
            tx.set_data(paths.offset(*tp), raw or b"0", version)

    def commit_tx(self, tx: Any) -> list[Any]:
        """Send a multi of claims; its per-operation results (exceptions for the failed ones)."""
        try:
            return list(tx.commit())
        except NoAuthError as e:
            raise CoordinationAuthError(
                f"ZooKeeper refused a claim in group {self._session.paths.group!r} (digest ACL)"
            ) from e

    def new_claim(self, tp: TopicPartition, thread: str, raw: bytes | None, version: int | None, res: Any) -> Claim:
        """The claim made by a successful multi (``res``: the result of its offset operation)."""
        new_version = res.version if version is not None else 0
        return Claim(thread, self._offset_value(tp, raw), new_version)

    def _offset_value(self, tp: TopicPartition, raw: bytes | None) -> int:
        if raw is None:
            return 0
        try:
            v = int(raw.decode())
            if v < 0:
                raise ValueError("negative")
            return v
        except (ValueError, UnicodeDecodeError):
            log.warning("%s: offset node %s holds %.40r, not an offset: starting at 0", self._name,
                        self._session.paths.offset(*tp), raw)  # fmt: skip
            return 0

    # ------------------------------------------------------------------ releasing
    def revoke(self, tps: Iterable[TopicPartition], reason: RevokeReason, *, release: bool) -> None:
        """Stop owning ``tps``: ``on_revoked`` first (commits still allowed), then, with ``release``,
        delete their owner nodes."""
        with self.lock:
            claims = {tp: self.owned.pop(tp) for tp in tps if tp in self.owned}
            self.revoking.update(claims)
        if not claims:
            return
        self._lifecycle.revoked(frozenset(claims), reason)
        try:
            if release:
                self.release(claims)
                self._session.stats.bump("released", len(claims))
        finally:
            with self.lock:
                for tp in claims:
                    self.revoking.pop(tp, None)

    def release(self, tps: Iterable[TopicPartition]) -> None:
        """Delete the owner nodes of ``tps`` (this session's). Until each delete is answered the
        partition stays in ``unreleased``: a connection lost in the middle leaves nodes that may
        still be held by this live session although this member no longer counts them as owned —
        nobody else could ever claim them — so :meth:`release_leftovers` deletes them later."""
        tps = sorted(tps)
        paths = self._session.paths
        with self.lock:
            self.unreleased.update(tps)
        with self.commit_lock:
            if self._one_by_one:  # Kafka deletes them one by one
                for tp in tps:
                    self._session.delete(paths.owner(*tp))
                    with self.lock:
                        self.unreleased.discard(tp)
            else:
                self.delete_many([paths.owner(*tp) for tp in tps])
                with self.lock:
                    self.unreleased.difference_update(tps)

    def interrupted(self, tps: Iterable[TopicPartition]) -> None:
        """Claims cut off by a lost connection: the multis answered but not counted as owned yet, and
        the one in flight (ZooKeeper may have applied it). Their owner nodes may be held by this live
        session, where no other member could ever claim them, and this member's next share may not
        include them: :meth:`release_leftovers` deletes them once connected again."""
        with self.lock:
            self.unreleased.update(tps)

    def drop_own_leftover(self, tp: TopicPartition) -> bool:
        """Delete ``tp``'s owner node if this live session holds it although this member does not
        count it as owned: a claim whose answer was lost (the connection dropped after ZooKeeper
        applied it) leaves such a node, and every later claim of ``tp`` would conflict with it for
        as long as the session lives. Whether it deleted one."""
        session = self._session
        path = session.paths.owner(*tp)
        session.stats.count()
        stat = session.client.exists(path)
        with self.lock:
            held_here = tp in self.owned or tp in self.revoking
        if stat is None or held_here or session.session is None or stat.ephemeralOwner != session.session:
            return False
        log.info("%s: deleting owner node %s left by a claim whose answer was lost", self._name, path)
        session.delete(path)
        return True

    def release_leftovers(self) -> None:
        """Delete the owner nodes a lost connection kept :meth:`release` from deleting, if this
        session still holds them (if the delete went through unanswered, the node is gone, or
        another member's by now: that one is left alone)."""
        with self.lock:
            left = sorted(self.unreleased)
        if not left:
            return
        session, paths = self._session, self._session.paths
        for tp in left:
            session.stats.count()
            stat = session.client.exists(paths.owner(*tp))
            with self.lock:
                held_here = tp not in self.owned and tp not in self.revoking
            if stat is not None and stat.ephemeralOwner == session.session and held_here:
                log.info("%s: deleting owner node %s left by an interrupted release", self._name, paths.owner(*tp))
                session.delete(paths.owner(*tp))
            with self.lock:
                self.unreleased.discard(tp)

    def delete_many(self, paths: list[str]) -> None:
        """Delete nodes in multis of :data:`CLAIM_BATCH`; a failed multi (a node gone already) one by one."""
        for i in range(0, len(paths), CLAIM_BATCH):
            chunk = paths[i : i + CLAIM_BATCH]
            tx = self._session.client.transaction()
            for p in chunk:
                tx.delete(p)
            self._session.stats.count(len(chunk))
            if any(isinstance(r, Exception) for r in tx.commit()):
                for p in chunk:  # one was gone already: delete the rest one by one
                    self._session.delete(p)
