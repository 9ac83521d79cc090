"""Read a group's state from ZooKeeper: members, leader and generation, the owner and committed
offset of every partition, and the lag when the topic describes a synthetic source."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from kazoo.exceptions import NoNodeError

from mqbalance.coordination.layout import (
    GroupPaths,
    parse_assignment,
    parse_member,
    parse_partitions,
    parse_source_rate,
)
from mqbalance.coordination.session import short_session

__all__ = ["GroupStatus", "PartitionRow", "group_status", "source_end"]


def source_end(ctime_ms: int, rate: float, now: float | None = None) -> int:
    """How many messages the synthetic source of a topic created at ``ctime_ms`` holds per
    partition at wall time ``now``: ``floor(rate × seconds since creation)``."""
    now = time.time() if now is None else now
    return max(0, int((now - ctime_ms / 1000) * rate))


@dataclass
class PartitionRow:
    topic: str
    partition: int
    owner: str | None
    offset: int | None
    end: int | None
    lag: int | None


@dataclass
class GroupStatus:
    group: str
    members: list[dict[str, Any]] = field(default_factory=list)
    leader: str | None = None
    generation: int | None = None
    partitions: list[PartitionRow] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)

    @property
    def unowned(self) -> int:
        return sum(1 for r in self.partitions if r.owner is None)

    def to_json(self) -> str:
        d = asdict(self)
        d["unowned"] = self.unowned
        return json.dumps(d, indent=1)

    def format(self) -> str:
        lines = [
            (
                f"group {self.group}: {len(self.members)} members, leader {self.leader or '-'}, "
                f"generation {self.generation if self.generation is not None else '-'}, "
                f"{len(self.partitions)} partitions, {self.unowned} unowned"
            )
        ]
        lines.append(f"{'member':<40} {'strategy':<16} {'mode':<13} subscription")
        for m in self.members:
            sub = ",".join(f"{t}:{n}" for t, n in m["subscription"].items())
            lines.append(f"{m['id']:<40} {m.get('strategy') or '-':<16} {m.get('mode') or '-':<13} {sub}")
        lines.append("")
        lines.append(f"{'topic':<20} {'part':>5} {'owner':<42} {'offset':>10} {'end':>10} {'lag':>8}")
        for r in self.partitions:
            lines.append(
                f"{r.topic:<20} {r.partition:>5} {r.owner or '(nobody)':<42} "
                f"{'-' if r.offset is None else r.offset:>10} {'-' if r.end is None else r.end:>10} "
                f"{'-' if r.lag is None else r.lag:>8}"
            )
        for path in self.malformed:
            lines.append(f"malformed node ignored: {path}")
        return "\n".join(lines)


def group_status(hosts: str, group: str, *, timeout: float = 5.0, auth: tuple[str, str] | None = None) -> GroupStatus:
    """Everything about ``group`` that ZooKeeper holds (one read-only session)."""
    paths = GroupPaths(group)
    with short_session(hosts, timeout=timeout, auth=auth) as client:
        st = GroupStatus(group)
        topics: set[str] = set()
        for cid in sorted(_children(client, paths.ids)):
            try:
                raw, stat = client.get(paths.member(cid))
            except NoNodeError:
                continue
            info = parse_member(paths.member(cid), cid, raw)
            if info is None:
                st.malformed.append(paths.member(cid))
                continue
            topics |= set(info.subscription)
            st.members.append(
                {
                    "id": cid,
                    "subscription": dict(info.subscription),
                    "strategy": info.strategy,
                    "mode": info.mode,
                    "session": f"0x{stat.ephemeralOwner:x}",
                }
            )
        topics |= set(_children(client, paths.owners)) | set(_children(client, paths.offsets))
        try:
            raw, _ = client.get(paths.assignment)
            a = parse_assignment(raw, paths.assignment)
            if a is not None:
                st.generation, st.leader = a.generation, a.leader
            elif raw:
                st.malformed.append(paths.assignment)
        except NoNodeError:
            pass
        election = sorted(_children(client, paths.leader), key=lambda n: n.rsplit("_", 1)[-1])
        if election:
            with contextlib.suppress(NoNodeError):
                st.leader = client.get(f"{paths.leader}/{election[0]}")[0].decode(errors="replace")
        now = time.time()
        for t in sorted(topics):
            try:
                raw, tstat = client.get(GroupPaths.topic(t))
                parts = parse_partitions(raw, GroupPaths.topic(t))
                if parts is None:
                    st.malformed.append(GroupPaths.topic(t))
                    parts = {}
                rate = parse_source_rate(raw)
            except NoNodeError:
                parts, rate, tstat = {}, None, None
            owned = set(_children(client, f"{paths.owners}/{t}"))
            committed = set(_children(client, f"{paths.offsets}/{t}"))
            for p in sorted(set(parts) | {int(x) for x in owned | committed if x.isdigit()}):
                owner = offset = None
                if str(p) in owned:
                    with contextlib.suppress(NoNodeError):
                        owner = client.get(paths.owner(t, p))[0].decode(errors="replace")
                if str(p) in committed:
                    try:
                        offset = int(client.get(paths.offset(t, p))[0].decode())
                    except (NoNodeError, ValueError):
                        st.malformed.append(paths.offset(t, p))
                end = source_end(tstat.ctime, rate, now) if rate and tstat is not None else None
                lag = None if end is None else end - (offset or 0)
                st.partitions.append(PartitionRow(t, p, owner, offset, end, lag))
        return st


def _children(client: Any, path: str) -> list[str]:
    try:
        return list(client.get_children(path))
    except NoNodeError:
        return []
