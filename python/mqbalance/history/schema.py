"""The history dataset: what ``mqbalance watch`` writes and ``mqbalance history`` reads.

A history is a directory. It holds a marker file and one Hive-partitioned Parquet table per kind
of record, so Spark (``spark.read.parquet(f"{root}/members")``) and any Arrow tool
(``pyarrow.dataset.dataset(..., partitioning="hive")``) read it directly::

    DIR/
      _mqbalance_history.json              {"format": "mqbalance-history", "schema_version": 3,
                                            "cluster_kind": "rocketmq" | "kafka"}
      ticks/date=2026-11-25/hour=03/part-<first tick id, 12 digits>-<run id>.parquet
      groups/…   members/…   ownership/…   offsets/…   gaps/…       (same partitioning)

A history holds one cluster of one kind (``cluster_kind`` in the marker; absent in histories
written before version 3, which are RocketMQ's): a watcher of one kind refuses a directory of the
other (:func:`cluster_kind` reads it). A Kafka partition is a queue with ``broker_name = ""`` and
``queue_id`` = the partition.

The dataset records **changes**, not copies. Each table's rows are events; a ``checkpoint`` row
repeats the whole current state of its kind, so a reader that starts at any time finds the state
at the last checkpoint before it and applies the changes after it. Between checkpoints an
unchanged fleet writes nothing but its tick rows.

Writing is append-only and crash-safe: a file is written under a name starting with ``.`` (which
Spark and Arrow skip) and renamed into place when complete, so a half-written file is never read
as data. Retention deletes whole ``hour=`` directories, oldest first.

Every time is a UTC timestamp in milliseconds (``ts``). ``tick_id`` increases by one per tick
across restarts of the watcher (a restart continues from the highest id found); ``run_id``
names one watcher process, so a restart is visible as a new run.

The tables (``TABLES``):

* ``ticks`` — one row per tick that ran: when, how long it took, what it read (``membership``,
  ``offsets`` or both), how many ticks were skipped before it because the previous one ran late,
  and ``clock_jump_ms``: how far the wall clock moved against the monotonic clock since the last
  tick (negative when it went backwards; durations are measured on the monotonic clock, never
  negative), and whether the tick wrote a ``checkpoint`` (then every other table holds the whole
  state at that tick, even when that state is empty). A tick's row is written after its events:
  events of a tick without a row were cut short by a crash and are not data.
* ``groups`` — a consumer group ``appear`` s, ``disappear`` s, or changes ``subscription``
  (message model, subscribed topics, the group's strategy); ``checkpoint`` rows list them all.
* ``members`` — a connection (client id **and** address, so two processes sharing an id are two
  rows) ``join`` s or ``leave`` s a group, with the language, version and strategy it reports.
* ``ownership`` — a queue's owner changes, as our exact allocation computes it from the members
  and routes at that tick: ``owner`` is the client id (null: owned by nobody) and ``processes``
  how many connected processes run that id (0: nobody, 2 or more: owned twice); ``remove`` when
  the queue is no longer the group's (its topic dropped from the group's subscriptions, the topic
  or the group gone): owned neither by nobody nor twice.
* ``offsets`` — at the offsets interval, per queue whose committed offset or broker max offset
  changed: both values (null where the broker did not say); and lag seconds
  (:mod:`mqbalance.fleet.rocketmq.lag_time`): ``oldest_store_ms``, the broker's store time (ms
  since the epoch) of the oldest message the group has not consumed, and ``lag_time``, how it is
  known — ``exact`` (read at the committed offset), ``carried`` (an earlier reading at a lower
  offset, not read again yet within the per-tick budget: an upper bound), ``unread`` — both null
  when the queue has no lag. The lag in seconds at any time ``t`` is ``t - oldest_store_ms``. A row
  is also written when only these change. (Added in version 2 as nullable columns: files written
  before read them as null, and a reader that does not know them reads the rest unchanged.)
* ``gaps`` — what could not be read at a tick: the broker, its address, the request and the error.

Kafka (version 3 adds nullable columns, appended; RocketMQ rows leave them null and files written
before read them as null):

* ``groups`` — ``group_type`` (``classic`` | ``consumer``), ``state`` (the broker's own string:
  ``Stable``, ``PreparingRebalance``, ``CompletingRebalance``, ``Empty``, ``Dead``, ``Assigning``,
  ``Reconciling``, …), ``protocol_type``, ``generation`` (a classic group's generation id, or a
  consumer-protocol group's group epoch: the broker's number, so the rebalances between two rows
  are the difference even when generations in between were never seen) and ``assignment_epoch``
  (consumer protocol's target assignment epoch). ``strategy`` is the assignor, ``subscriptions``
  the union of the members' topics, ``message_model`` null. Event ``state``: state, generation or
  assignment epoch changed (the row carries every column's current value).
* ``members`` — keyed by ``member_id`` (``client_id`` = client.id, ``client_addr`` = the host the
  broker reports), with ``instance_id`` (group.instance.id; null when dynamic), ``member_epoch``
  (consumer protocol) and ``rack``. Event ``epoch``: a consumer-protocol member's epoch changed.
* ``ownership`` — ``owner`` is the member id holding the partition as the broker reports the
  assignment; ``target_owner`` the consumer protocol's target assignment (null for classic).
* ``offsets`` — ``max_offset`` is the log-end offset; ``timestamp_type`` (``CreateTime`` |
  ``LogAppendTime``) says which clock ``oldest_store_ms`` is on.
* ``gaps`` — ``broker_name`` is the node id ("" for the bootstrap), ``request`` the Kafka request.

>>> [f.name for f in TABLES["ownership"]][:6]
['ts', 'tick_id', 'event', 'group', 'topic', 'broker_name']
>>> sorted(EVENTS["members"])
['checkpoint', 'epoch', 'join', 'leave']
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from mqbalance.exceptions import HistoryError

__all__ = [
    "CLUSTER_KINDS",
    "EVENTS",
    "FORMAT",
    "MARKER_FILE",
    "PARTITION_COLUMNS",
    "SCHEMA_VERSION",
    "TABLES",
    "TICK_KINDS",
    "cluster_kind",
]

#: the value of ``format`` in the marker file; a directory without it is not a history
FORMAT = "mqbalance-history"
#: the marker file at the root of every history directory
MARKER_FILE = "_mqbalance_history.json"
#: bumped on any change a reader of an older version would misread; a reader refuses a newer one.
#: 2: ownership events may be ``remove`` (a queue no longer the group's), which version 1 readers
#: would count as owned by nobody. A writer appending to a version-1 history marks it 2.
#: 3: Kafka histories (``cluster_kind``), nullable columns appended, events ``state`` and ``epoch``.
SCHEMA_VERSION = 3
#: the kinds of cluster a history holds (``cluster_kind`` in the marker; absent: ``rocketmq``)
CLUSTER_KINDS = ("rocketmq", "kafka")
#: the Hive partition columns of every table (directories ``date=YYYY-MM-DD/hour=HH``, UTC)
PARTITION_COLUMNS = ("date", "hour")

#: what a tick read
TICK_KINDS = frozenset({"membership", "offsets", "both"})

_TS = pa.timestamp("ms", tz="UTC")
_COMMON = [pa.field("ts", _TS, nullable=False), pa.field("tick_id", pa.int64(), nullable=False)]
_QUEUE = [
    pa.field("group", pa.string(), nullable=False),
    pa.field("topic", pa.string(), nullable=False),
    pa.field("broker_name", pa.string(), nullable=False),
    pa.field("queue_id", pa.int32(), nullable=False),
]


def _event() -> pa.Field:
    return pa.field("event", pa.string(), nullable=False)


#: the Arrow schema of each table (partition columns not included: they are the directory names)
TABLES: dict[str, pa.Schema] = {
    "ticks": pa.schema(
        [
            *_COMMON,
            pa.field("run_id", pa.string(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("checkpoint", pa.bool_(), nullable=False),
            pa.field("duration_ms", pa.int64(), nullable=False),
            pa.field("skipped_before", pa.int32(), nullable=False),
            pa.field("clock_jump_ms", pa.int64(), nullable=False),
            pa.field("groups", pa.int32(), nullable=False),
            pa.field("changed_groups", pa.int32(), nullable=False),
            pa.field("requests", pa.int32(), nullable=False),
            pa.field("errors", pa.int32(), nullable=False),
        ]
    ),
    "groups": pa.schema(
        [
            *_COMMON,
            _event(),
            pa.field("group", pa.string(), nullable=False),
            pa.field("message_model", pa.string()),
            pa.field("subscriptions", pa.list_(pa.string())),
            pa.field("strategy", pa.string()),
            pa.field("group_type", pa.string()),
            pa.field("state", pa.string()),
            pa.field("protocol_type", pa.string()),
            pa.field("generation", pa.int32()),
            pa.field("assignment_epoch", pa.int32()),
        ]
    ),
    "members": pa.schema(
        [
            *_COMMON,
            _event(),
            pa.field("group", pa.string(), nullable=False),
            pa.field("client_id", pa.string(), nullable=False),
            pa.field("client_addr", pa.string(), nullable=False),
            pa.field("language", pa.string()),
            pa.field("version", pa.int32()),
            pa.field("strategy", pa.string()),
            pa.field("member_id", pa.string()),
            pa.field("instance_id", pa.string()),
            pa.field("member_epoch", pa.int32()),
            pa.field("rack", pa.string()),
        ]
    ),
    "ownership": pa.schema(
        [
            *_COMMON,
            _event(),
            *_QUEUE,
            pa.field("owner", pa.string()),
            pa.field("processes", pa.int16(), nullable=False),
            pa.field("target_owner", pa.string()),
        ]
    ),
    "offsets": pa.schema(
        [
            *_COMMON,
            _event(),
            *_QUEUE,
            pa.field("committed", pa.int64()),
            pa.field("max_offset", pa.int64()),
            pa.field("oldest_store_ms", pa.int64()),
            pa.field("lag_time", pa.string()),
            pa.field("timestamp_type", pa.string()),
        ]
    ),
    "gaps": pa.schema(
        [
            *_COMMON,
            pa.field("broker_name", pa.string()),
            pa.field("address", pa.string()),
            pa.field("request", pa.string(), nullable=False),
            pa.field("error", pa.string(), nullable=False),
        ]
    ),
}

#: the values of ``event`` per table that has one
EVENTS: dict[str, frozenset[str]] = {
    "groups": frozenset({"appear", "disappear", "subscription", "state", "checkpoint"}),
    "members": frozenset({"join", "leave", "epoch", "checkpoint"}),
    "ownership": frozenset({"change", "remove", "checkpoint"}),
    "offsets": frozenset({"change", "checkpoint"}),
}


def cluster_kind(root: str | Path) -> str:
    """The kind of cluster the history at ``root`` holds: ``"rocketmq"`` or ``"kafka"`` (a marker
    without ``cluster_kind``, written before version 3, is RocketMQ's). A
    :class:`~mqbalance.exceptions.HistoryError` when ``root`` is not a history.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / MARKER_FILE).write_text('{"format": "mqbalance-history", "schema_version": 2}')
    >>> cluster_kind(d)
    'rocketmq'
    """
    if not isinstance(root, (str, Path)) or not str(root) or "\0" in str(root):
        raise HistoryError(f"a history directory must be a non-empty path, got {root!r}", root)
    marker = Path(root) / MARKER_FILE
    try:
        meta = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HistoryError(f"{root}: not a mqbalance history ({e})", str(root)) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise HistoryError(f"{root}: not a mqbalance history ({MARKER_FILE} says {meta!r:.80})", str(root))
    kind = meta.get("cluster_kind", "rocketmq")
    if kind not in CLUSTER_KINDS:
        raise HistoryError(f"{root}: unknown cluster kind {kind!r} in {MARKER_FILE}", kind)
    return str(kind)
