//! RocketMQ `AllocateMessageQueueStrategy` implementations, whole group first.
//!
//! [`owners`] computes, in one pass, the consumer slot that owns every queue of `mqAll` (the first
//! slot of the owning id; `-1` when nobody consumes it). [`allocate`] is Java's per-client call —
//! the input check, then that client's queues in the order Java returns them.
//!
//! Both take the lists *as given*: `RebalanceImpl` sorts them first (see [`crate::order`] and
//! [`crate::QueueTable::java_sort_order`]), but raw calls are part of the contract too.
//!
//! `CONFIG` (a fixed list, no check) has no allocation math and lives in the Python layer.
//!
//! ```
//! use mqbalance_core::{allocate, ConsumerList, QueueTable, Strategy};
//! let q = QueueTable::from_rows((0..7).map(|i| ("T", "b", i)));
//! let g = ConsumerList::new(vec!["a".into(), "b".into(), "c".into()]);
//! assert_eq!(allocate::owners(&Strategy::AvgByCircle, &q.all(), &g, None).unwrap(), vec![0, 1, 2, 0, 1, 2, 0]);
//! // A client that is not in the group gets nothing (Java logs "[BUG]" and returns an empty list).
//! assert_eq!(allocate::allocate(&Strategy::Avg, Some("zz"), &q.all(), &g, None).unwrap(), Vec::<u32>::new());
//! ```

pub mod avg;
pub mod batch;
pub mod bounded;
pub mod check;
pub mod circle;
pub mod consistent_hash;
pub mod machine_room;
pub mod nearby;
pub mod sticky;

use std::collections::BTreeSet;

use crate::error::AllocateError;
use crate::queues::{ConsumerList, QueueView};
use crate::ring::Charset;

pub use bounded::Epsilon;
pub use nearby::RoomMap;

/// An allocation strategy and its settings. Names follow Java's `getName()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    /// `AVG`: contiguous blocks; the first `n mod c` consumers get one more.
    Avg,
    /// `AVG_BY_CIRCLE`: round robin.
    AvgByCircle,
    /// `CONSISTENT_HASH`: MD5 ring with `virtual_node_cnt` virtual nodes per client id.
    ConsistentHash {
        /// Virtual nodes per id (Java default 10; 0 means nobody gets anything).
        virtual_node_cnt: u32,
        /// How strings become bytes before MD5 (UTF-8 in 5.x).
        charset: Charset,
    },
    /// `CONSISTENT_HASH_BOUNDED`: the `CONSISTENT_HASH` ring, nobody above
    /// ⌈(1+ε)·queues/consumers⌉; a queue whose owner is full walks on (see [`bounded`]).
    ConsistentHashBounded {
        /// Virtual nodes per id, as in `CONSISTENT_HASH`.
        virtual_node_cnt: u32,
        /// How strings become bytes before MD5.
        charset: Charset,
        /// The load slack ε (≥ 0, finite).
        epsilon: Epsilon,
    },
    /// `STICKY`: balanced, fewest moves from the previous assignment (whole group only; see
    /// [`sticky`]).
    Sticky,
    /// `MACHINE_ROOM`: queues of brokers named `<idc>@<name>` whose idc is in the set.
    MachineRoom {
        /// Java's `consumeridcs`; `None` = never set.
        consumer_idcs: Option<BTreeSet<String>>,
    },
    /// `MACHINE_ROOM_NEARBY-<inner>`: each machine room's queues go to that room's consumers
    /// (through `inner`); rooms without consumers are shared by everybody. Rooms come per call.
    MachineRoomNearby {
        /// The inner strategy (not NEARBY itself).
        inner: Box<Strategy>,
    },
}

/// The settings a strategy can be built from by name ([`Strategy::from_name`]); each strategy
/// reads the ones it has and ignores the others.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyParams {
    /// Virtual nodes per client id (`CONSISTENT_HASH*`; Java default 10).
    pub virtual_node_cnt: i64,
    /// How strings become bytes before MD5 (`CONSISTENT_HASH*`).
    pub charset: Charset,
    /// `MACHINE_ROOM`'s `consumeridcs` (`None` = never set).
    pub consumer_idcs: Option<BTreeSet<String>>,
    /// `MACHINE_ROOM_NEARBY`'s inner strategy (required there).
    pub inner: Option<Strategy>,
    /// `CONSISTENT_HASH_BOUNDED`'s ε.
    pub epsilon: f64,
}

impl Default for StrategyParams {
    fn default() -> Self {
        StrategyParams {
            virtual_node_cnt: 10,
            charset: Charset::Utf8,
            consumer_idcs: None,
            inner: None,
            epsilon: bounded::DEFAULT_EPSILON,
        }
    }
}

impl Strategy {
    /// The strategy Java's `getName()` calls `kind` (`MACHINE_ROOM_NEARBY` without its inner
    /// suffix: the inner strategy is `params.inner`), with its settings from `params`.
    ///
    /// ```
    /// use mqbalance_core::allocate::StrategyParams;
    /// use mqbalance_core::{AllocateError, Strategy};
    /// let inner = Some(Strategy::from_name("AVG_BY_CIRCLE", StrategyParams::default()).unwrap());
    /// let s = Strategy::from_name("MACHINE_ROOM_NEARBY", StrategyParams { inner, ..Default::default() });
    /// assert_eq!(s.unwrap().name(), "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE");
    /// let err = Strategy::from_name("AVG_BY_HASH", StrategyParams::default()).unwrap_err();
    /// assert_eq!(err, AllocateError::UnknownStrategy { name: "AVG_BY_HASH".into() });
    /// ```
    pub fn from_name(kind: &str, params: StrategyParams) -> Result<Self, AllocateError> {
        let StrategyParams {
            virtual_node_cnt,
            charset,
            consumer_idcs,
            inner,
            epsilon,
        } = params;
        match kind {
            "AVG" => Ok(Strategy::Avg),
            "AVG_BY_CIRCLE" => Ok(Strategy::AvgByCircle),
            "CONSISTENT_HASH" => Strategy::consistent_hash(virtual_node_cnt, charset),
            "CONSISTENT_HASH_BOUNDED" => {
                Strategy::consistent_hash_bounded(virtual_node_cnt, charset, epsilon)
            }
            "STICKY" => Ok(Strategy::Sticky),
            "MACHINE_ROOM" => Ok(Strategy::MachineRoom { consumer_idcs }),
            "MACHINE_ROOM_NEARBY" => {
                Strategy::nearby(inner.ok_or(AllocateError::MissingInner {
                    name: kind.to_owned(),
                })?)
            }
            _ => Err(AllocateError::UnknownStrategy {
                name: kind.to_owned(),
            }),
        }
    }

    /// `CONSISTENT_HASH` from Java's `int virtualNodeCnt` (negative → Java's constructor error).
    pub fn consistent_hash(virtual_node_cnt: i64, charset: Charset) -> Result<Self, AllocateError> {
        Ok(Strategy::ConsistentHash {
            virtual_node_cnt: vnodes(virtual_node_cnt)?,
            charset,
        })
    }

    /// `CONSISTENT_HASH_BOUNDED` from Java-style `int virtualNodeCnt` and `double epsilon`.
    pub fn consistent_hash_bounded(
        virtual_node_cnt: i64,
        charset: Charset,
        epsilon: f64,
    ) -> Result<Self, AllocateError> {
        let virtual_node_cnt = vnodes(virtual_node_cnt)?;
        Ok(Strategy::ConsistentHashBounded {
            virtual_node_cnt,
            charset,
            epsilon: Epsilon::new(epsilon)?,
        })
    }

    /// `MACHINE_ROOM_NEARBY` around `inner`.
    pub fn nearby(inner: Strategy) -> Result<Self, AllocateError> {
        if matches!(inner, Strategy::MachineRoomNearby { .. }) {
            return Err(AllocateError::UnsupportedStrategy {
                name: inner.name(),
                reason: "MACHINE_ROOM_NEARBY cannot nest another MACHINE_ROOM_NEARBY".into(),
            });
        }
        if matches!(inner, Strategy::Sticky) {
            return Err(AllocateError::UnsupportedStrategy {
                name: inner.name(),
                reason: "STICKY needs a previous assignment, which MACHINE_ROOM_NEARBY's per-room calls do not have".into(),
            });
        }
        Ok(Strategy::MachineRoomNearby {
            inner: Box::new(inner),
        })
    }

    /// Java `getName()`.
    pub fn name(&self) -> String {
        match self {
            Strategy::Avg => "AVG".into(),
            Strategy::AvgByCircle => "AVG_BY_CIRCLE".into(),
            Strategy::ConsistentHash { .. } => "CONSISTENT_HASH".into(),
            Strategy::ConsistentHashBounded { .. } => "CONSISTENT_HASH_BOUNDED".into(),
            Strategy::Sticky => "STICKY".into(),
            Strategy::MachineRoom { .. } => "MACHINE_ROOM".into(),
            Strategy::MachineRoomNearby { inner } => {
                format!("MACHINE_ROOM_NEARBY-{}", inner.name())
            }
        }
    }

    /// Whether the strategy reads topics / broker names (AVG and `AVG_BY_CIRCLE` only count queues).
    pub fn reads_queue_names(&self) -> bool {
        !matches!(
            self,
            Strategy::Avg | Strategy::AvgByCircle | Strategy::Sticky
        )
    }
}

/// Java's `int virtualNodeCnt`: negative → Java's constructor error; past `i32::MAX` → too large.
fn vnodes(virtual_node_cnt: i64) -> Result<u32, AllocateError> {
    match u32::try_from(virtual_node_cnt) {
        Ok(v) if virtual_node_cnt <= i64::from(i32::MAX) => Ok(v),
        _ if virtual_node_cnt < 0 => Err(AllocateError::IllegalVirtualNodeCnt(virtual_node_cnt)),
        _ => Err(AllocateError::RingTooLarge {
            consumers: 1,
            virtual_node_cnt: u32::MAX,
            limit: crate::ring::MAX_RING_ENTRIES,
        }),
    }
}

/// Owner slot of every queue for the whole group (first slot of the owning id, `-1` for nobody).
///
/// Errors are those every member's `allocate` would raise (empty inputs; strategy errors). Queues
/// that would go to an empty id `""` are reported as unowned: that client's own call throws.
pub fn owners(
    strategy: &Strategy,
    queues: &QueueView<'_>,
    group: &ConsumerList,
    rooms: Option<&RoomMap>,
) -> Result<Vec<i64>, AllocateError> {
    owners_with_previous(strategy, queues, group, rooms, None)
}

/// [`owners`] with the previous assignment `STICKY` needs: `previous[k]` is the slot (position in
/// `group`) that owned queue `k` of the view, negative for nobody; `None` = not known, which
/// `STICKY` refuses ([`AllocateError::PreviousRequired`]). Other strategies ignore it.
pub fn owners_with_previous(
    strategy: &Strategy,
    queues: &QueueView<'_>,
    group: &ConsumerList,
    rooms: Option<&RoomMap>,
    previous: Option<&[i64]>,
) -> Result<Vec<i64>, AllocateError> {
    if !strategy.reads_queue_names() {
        return owners_of_count(strategy, queues.len(), group, previous);
    }
    check::check_lists(queues.len(), group.len())?;
    let mut out = owners_unchecked(strategy, queues, group, rooms)?;
    unown_empty_ids(&mut out, group);
    Ok(out)
}

/// [`owners_with_previous`] for the strategies that only count the queues (`AVG`,
/// `AVG_BY_CIRCLE`, `STICKY`: see [`Strategy::reads_queue_names`]): `n` sorted queues, no table.
/// Any other strategy is [`AllocateError::UnsupportedStrategy`].
///
/// ```
/// use mqbalance_core::{allocate::{owners_of_count, Strategy}, ConsumerList};
/// let group = ConsumerList::new(vec!["a".into(), "b".into()]);
/// assert_eq!(owners_of_count(&Strategy::Avg, 5, &group, None).unwrap(), vec![0, 0, 0, 1, 1]);
/// ```
pub fn owners_of_count(
    strategy: &Strategy,
    n: usize,
    group: &ConsumerList,
    previous: Option<&[i64]>,
) -> Result<Vec<i64>, AllocateError> {
    check::check_lists(n, group.len())?;
    let mut out = match (strategy, previous) {
        (Strategy::Avg, _) => avg::owners(n, group),
        (Strategy::AvgByCircle, _) => circle::owners(n, group),
        (Strategy::Sticky, Some(previous)) => sticky::owners(n, group, previous)?,
        (Strategy::Sticky, None) => {
            return Err(AllocateError::PreviousRequired {
                name: strategy.name(),
            })
        }
        _ => {
            return Err(AllocateError::UnsupportedStrategy {
                name: strategy.name(),
                reason: "it reads queue names, not only their number".into(),
            })
        }
    };
    unown_empty_ids(&mut out, group);
    Ok(out)
}

/// What each slot's queues get under `AVG` / `AVG_BY_CIRCLE`: `j` for the first slot of an id,
/// `-1` for a later slot of a duplicated id and for the (first) slot of the empty id `""`
/// (`empty_slot`), whose own call throws.
///
/// ```
/// use mqbalance_core::allocate::slot_owners;
/// assert_eq!(slot_owners(&[0, 1, 0, 3], Some(3)), vec![0, 1, -1, -1]);
/// ```
pub fn slot_owners(first: &[u32], empty_slot: Option<usize>) -> Vec<i64> {
    first
        .iter()
        .enumerate()
        .map(|(j, &f)| {
            if f as usize == j && empty_slot != Some(j) {
                j as i64
            } else {
                -1
            }
        })
        .collect()
}

/// [`owners_of_count`] for `AVG` / `AVG_BY_CIRCLE` without a [`ConsumerList`]: only the ids'
/// first slots ([`crate::queues::first_slots`], which read borrowed ids) and the first slot of an
/// empty id matter. Each entry is written once (no zeroed buffer first). Same checks and errors as
/// [`owners_of_count`].
///
/// ```
/// use mqbalance_core::allocate::{owners_of_first_slots, Strategy};
/// assert_eq!(owners_of_first_slots(&Strategy::Avg, 5, &[0, 1], None).unwrap(), vec![0, 0, 0, 1, 1]);
/// ```
pub fn owners_of_first_slots(
    strategy: &Strategy,
    n: usize,
    first: &[u32],
    empty_slot: Option<usize>,
) -> Result<Vec<i64>, AllocateError> {
    check::check_lists(n, first.len())?;
    let mut out = Vec::with_capacity(n);
    match strategy {
        Strategy::Avg => avg::push_owners(&mut out, n, &slot_owners(first, empty_slot)),
        Strategy::AvgByCircle => circle::push_owners(&mut out, n, &slot_owners(first, empty_slot)),
        _ => {
            return Err(AllocateError::UnsupportedStrategy {
                name: strategy.name(),
                reason: "only AVG and AVG_BY_CIRCLE are computed from the count alone".into(),
            })
        }
    }
    Ok(out)
}

/// [`owners_of_first_slots`] fused with the check that every queue id is a Java `int` (the
/// queue ids are read in the same pass that writes the owners, each AVG block one run):
/// `Ok(None)` when some id is not (the caller names it; the check comes before the list checks,
/// as in [`owners_of_first_slots`]'s callers). `queue_ids.len()` is the number of queues.
///
/// ```
/// use mqbalance_core::allocate::{owners_of_first_slots_checked, Strategy};
/// let owners = owners_of_first_slots_checked(&Strategy::Avg, &[5, 6, 7, 8, 9], &[0, 1], None);
/// assert_eq!(owners.unwrap(), Some(vec![0, 0, 0, 1, 1]));
/// let bad = owners_of_first_slots_checked(&Strategy::Avg, &[5, 1 << 40], &[0], None);
/// assert_eq!(bad.unwrap(), None);
/// ```
pub fn owners_of_first_slots_checked(
    strategy: &Strategy,
    queue_ids: &[i64],
    first: &[u32],
    empty_slot: Option<usize>,
) -> Result<Option<Vec<i64>>, AllocateError> {
    let n = queue_ids.len();
    if n == 0 || first.is_empty() || !matches!(strategy, Strategy::Avg | Strategy::AvgByCircle) {
        if !crate::queues::all_java_ints(queue_ids) {
            return Ok(None);
        }
        return owners_of_first_slots(strategy, n, first, empty_slot).map(Some);
    }
    let slots = slot_owners(first, empty_slot);
    let (out, outside) = match strategy {
        Strategy::AvgByCircle => circle::owners_checked(queue_ids, &slots),
        _ => avg::owners_checked(queue_ids, &slots),
    };
    Ok((outside == 0).then_some(out))
}

/// Queues that would go to an empty id `""` become unowned (that client's own call throws).
pub(crate) fn unown_empty_ids(owners: &mut [i64], group: &ConsumerList) {
    if group.ids().iter().any(String::is_empty) {
        for o in owners.iter_mut().filter(|o| **o >= 0) {
            if group.ids()[*o as usize].is_empty() {
                *o = -1;
            }
        }
    }
}

/// [`owners`] after the list check (NEARBY's inner calls run on non-empty sub-lists).
pub(crate) fn owners_unchecked(
    strategy: &Strategy,
    queues: &QueueView<'_>,
    group: &ConsumerList,
    rooms: Option<&RoomMap>,
) -> Result<Vec<i64>, AllocateError> {
    Ok(match strategy {
        Strategy::Avg => avg::owners(queues.len(), group),
        Strategy::AvgByCircle => circle::owners(queues.len(), group),
        Strategy::ConsistentHash {
            virtual_node_cnt,
            charset,
        } => consistent_hash::owners(*virtual_node_cnt, *charset, queues, group)?,
        Strategy::ConsistentHashBounded {
            virtual_node_cnt,
            charset,
            epsilon,
        } => bounded::owners(*virtual_node_cnt, *charset, *epsilon, queues, group)?,
        Strategy::Sticky => {
            return Err(AllocateError::PreviousRequired {
                name: strategy.name(),
            })
        }
        Strategy::MachineRoom { consumer_idcs } => {
            machine_room::owners(consumer_idcs.as_ref(), queues, group)?
        }
        Strategy::MachineRoomNearby { inner } => {
            let inner = |view: &QueueView<'_>, group: &ConsumerList| {
                owners_unchecked(inner, view, group, None)
            };
            nearby::owners(inner, queues, group, require_rooms(strategy, rooms)?)?
        }
    })
}

fn require_rooms<'r>(
    strategy: &Strategy,
    rooms: Option<&'r RoomMap>,
) -> Result<&'r RoomMap, AllocateError> {
    rooms.ok_or_else(|| AllocateError::UnsupportedStrategy {
        name: strategy.name(),
        reason: "machine rooms of queues and consumers are required".into(),
    })
}

/// Java's per-client `allocate(group, currentCID, mqAll, cidAll)`: positions in `mqAll` of the
/// queues `current_id` gets, in the order Java returns them.
pub fn allocate(
    strategy: &Strategy,
    current_id: Option<&str>,
    queues: &QueueView<'_>,
    group: &ConsumerList,
    rooms: Option<&RoomMap>,
) -> Result<Vec<u32>, AllocateError> {
    let Some(me) = check::check(current_id, queues.len(), group)? else {
        return Ok(Vec::new());
    };
    match strategy {
        Strategy::MachineRoomNearby { inner } => {
            let inner = |id: &str, view: &QueueView<'_>, group: &ConsumerList| {
                allocate(inner, Some(id), view, group, None)
            };
            nearby::allocate_member(inner, me, queues, group, require_rooms(strategy, rooms)?)
        }
        _ => Ok(mine(&owners_unchecked(strategy, queues, group, rooms)?, me)),
    }
}

/// Positions owned by slot `me`, ascending (the order every non-NEARBY strategy returns).
pub(crate) fn mine(owners: &[i64], me: usize) -> Vec<u32> {
    owners
        .iter()
        .enumerate()
        .filter(|(_, &o)| o == me as i64)
        .map(|(k, _)| k as u32)
        .collect()
}

/// Every member's queue list in one pass: entry `j` holds what `allocate(group.ids()[j])` returns
/// for the first slot of each id (later slots of a duplicated id are left empty; their client is
/// the same id and gets the same list). An empty id in the group is Java's `currentCID is empty`
/// for that member, so it is an error here too.
pub fn assign(
    strategy: &Strategy,
    queues: &QueueView<'_>,
    group: &ConsumerList,
    rooms: Option<&RoomMap>,
) -> Result<Vec<Vec<u32>>, AllocateError> {
    assign_with_previous(strategy, queues, group, rooms, None)
}

/// [`assign`] with a previous assignment (see [`owners_with_previous`]).
pub fn assign_with_previous(
    strategy: &Strategy,
    queues: &QueueView<'_>,
    group: &ConsumerList,
    rooms: Option<&RoomMap>,
    previous: Option<&[i64]>,
) -> Result<Vec<Vec<u32>>, AllocateError> {
    check::check_lists(queues.len(), group.len())?;
    if group.ids().iter().any(String::is_empty) {
        return Err(AllocateError::EmptyCurrentId);
    }
    let owned = owners_with_previous(strategy, queues, group, rooms, previous)?;
    let mut lists = vec![Vec::new(); group.len()];
    for (k, &o) in owned.iter().enumerate() {
        if o >= 0 {
            lists[o as usize].push(k as u32);
        }
    }
    if let (Strategy::MachineRoomNearby { .. }, Some(rooms)) = (strategy, rooms) {
        nearby::order_member_lists(&mut lists, queues, rooms);
    }
    Ok(lists)
}

/// The `RebalanceImpl` path for a whole group: sort queues (`MessageQueue` order) and client ids
/// (Java string order) as every client does, then compute the owners. The result is aligned with
/// the *input* rows and names owners by their position in the *input* id list (first occurrence).
pub fn rebalance_owners(
    strategy: &Strategy,
    table: &crate::QueueTable,
    group: &ConsumerList,
    rooms: Option<&RoomMap>,
) -> Result<Vec<i64>, AllocateError> {
    rebalance_owners_with_previous(strategy, table, group, rooms, None)
}

/// [`rebalance_owners`] with a previous assignment aligned with the *input* rows, naming owners
/// by their position in the *input* id list (negative: nobody).
pub fn rebalance_owners_with_previous(
    strategy: &Strategy,
    table: &crate::QueueTable,
    group: &ConsumerList,
    rooms: Option<&RoomMap>,
    previous: Option<&[i64]>,
) -> Result<Vec<i64>, AllocateError> {
    if let Some(p) = previous {
        if p.len() != table.len() {
            return Err(AllocateError::LengthMismatch {
                what: "previous owners",
                got: p.len(),
                expected: table.len(),
            });
        }
    }
    let qperm = table.java_sort_order();
    let cperm = crate::order::sort_order(group.ids());
    let sorted_group = ConsumerList::new(
        cperm
            .iter()
            .map(|&j| group.ids()[j as usize].clone())
            .collect(),
    );
    let sorted_rooms = rooms.map(|r| r.permute_consumers(&cperm));
    let sorted_previous = match previous {
        Some(p) => {
            let mut inverse = vec![0i64; group.len()];
            for (s, &j) in cperm.iter().enumerate() {
                inverse[j as usize] = s as i64;
            }
            let mut out = Vec::with_capacity(qperm.len());
            for &r in &qperm {
                let o = p[r as usize];
                out.push(if o < 0 {
                    -1
                } else if (o as u64) < group.len() as u64 {
                    inverse[o as usize]
                } else {
                    return Err(AllocateError::InvalidCode {
                        what: "previous owners",
                        row: r as usize,
                        code: u32::try_from(o).unwrap_or(u32::MAX),
                        dict_len: group.len(),
                    });
                });
            }
            Some(out)
        }
        None => None,
    };
    let sorted = owners_with_previous(
        strategy,
        &table.view(&qperm),
        &sorted_group,
        sorted_rooms.as_ref(),
        sorted_previous.as_deref(),
    )?;
    let mut out = vec![-1i64; table.len()];
    for (&row, &o) in qperm.iter().zip(&sorted) {
        if o >= 0 {
            out[row as usize] = group.first_of(cperm[o as usize] as usize) as i64;
        }
    }
    Ok(out)
}
