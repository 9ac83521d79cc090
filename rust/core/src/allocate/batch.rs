//! Many groups in one call: the rows of a [`QueueTable`] split into contiguous segments, each a
//! (group, topic) with its own strategy and consumers, every segment sorted and assigned the
//! `RebalanceImpl` way. Java ranks of the string dictionaries are computed once for the batch, and
//! segments run on all cores. This is what a Spark executor calls for a whole bucket of groups.
//!
//! A group usually subscribes to many topics: segments that share one [`ConsumerList`] (the same
//! reference) share its Java-sorted order and, under `CONSISTENT_HASH`, its ring, each built once
//! per call instead of once per segment (a ring of 1,000 ids costs 10,000 MD5s).
//!
//! ```
//! use mqbalance_core::allocate::batch::{owners_by_segment, Segment};
//! use mqbalance_core::{ConsumerList, QueueTable, Strategy};
//! let t = QueueTable::from_rows([("A", "b", 1), ("A", "b", 0), ("B", "b", 0), ("B", "b", 1)]);
//! let g1 = ConsumerList::new(vec!["y".into(), "x".into()]);
//! let g2 = ConsumerList::new(vec!["z".into()]);
//! let segs = [Segment { strategy: &Strategy::Avg, group: &g1 }, Segment { strategy: &Strategy::Avg, group: &g2 }];
//! // Segment 1 sorted: A/b/0 → x (input position 1), A/b/1 → y (position 0).
//! assert_eq!(owners_by_segment(&t, &[0, 2, 4], &segs).unwrap(), vec![0, 1, 0, 0]);
//! ```

use rayon::prelude::*;

use rustc_hash::FxHashMap as HashMap;

use super::{check::check_lists, owners, unown_empty_ids, Strategy};
use crate::error::AllocateError;
use crate::order::{java_ranks, sort_order};
use crate::queues::{ConsumerList, QueueTable, QueueView};
use crate::ring::{Charset, ConsistentHashRing};

/// One (group, topic): its strategy and its consumers as listed (owners refer to positions here).
#[derive(Debug, Clone, Copy)]
pub struct Segment<'a> {
    /// The clients' strategy (not `MACHINE_ROOM_NEARBY`: rooms are per call).
    pub strategy: &'a Strategy,
    /// The group's client ids, in the order given.
    pub group: &'a ConsumerList,
}

/// Owners of every row (position of the owning id's first occurrence in its segment's consumer
/// list, `-1` for nobody). `bounds` has one more entry than `segments`; segment `s` is rows
/// `bounds[s]..bounds[s + 1]`. The first failing segment's error is returned with its index.
pub fn owners_by_segment(
    table: &QueueTable,
    bounds: &[usize],
    segments: &[Segment<'_>],
) -> Result<Vec<i64>, (usize, AllocateError)> {
    let reason = if bounds.len() != segments.len() + 1 {
        Some(format!(
            "has {} entries for {} segments (expected {})",
            bounds.len(),
            segments.len(),
            segments.len() + 1
        ))
    } else if bounds.first().is_some_and(|&b| b != 0) {
        Some(format!(
            "must start at 0 (rows before it would belong to no segment), got {}",
            bounds[0]
        ))
    } else if let Some(k) = bounds.windows(2).position(|w| w[0] > w[1]) {
        Some(format!(
            "must not decrease, got {} then {} at index {k}",
            bounds[k],
            bounds[k + 1]
        ))
    } else if bounds.last().is_some_and(|&b| b != table.len()) {
        Some(format!(
            "must end at the number of rows {}, got {}",
            table.len(),
            bounds.last().copied().unwrap_or(0)
        ))
    } else {
        None
    };
    if let Some(reason) = reason {
        return Err((0, AllocateError::InvalidBounds { reason }));
    }
    let trank = java_ranks(table.topic_dict());
    let brank = java_ranks(table.broker_dict());
    let (groups, of_segment) = shared_groups(segments);
    let per: Vec<Result<Vec<i64>, (usize, AllocateError)>> = segments
        .par_iter()
        .enumerate()
        .map(|(s, seg)| {
            let (a, b) = (bounds[s], bounds[s + 1]);
            let mut rows: Vec<u32> = (a as u32..b as u32).collect();
            rows.sort_by_key(|&r| {
                let r = r as usize;
                (
                    trank[table.topic_code(r) as usize],
                    brank[table.broker_code(r) as usize],
                    table.queue_id(r),
                    r,
                )
            });
            // A group seen in this segment only is prepared here and dropped with it.
            let alone;
            let shared = if let Some(shared) = &groups[of_segment[s]] {
                shared
            } else {
                alone = SharedGroup::new(seg.group, ring_settings(seg.strategy));
                &alone
            };
            let o = shared
                .owners(seg.strategy, &table.view(&rows))
                .map_err(|e| (s, e))?;
            let mut out = vec![-1i64; b - a];
            for (&row, &owner) in rows.iter().zip(&o) {
                if owner >= 0 {
                    out[row as usize - a] =
                        seg.group.first_of(shared.order[owner as usize] as usize) as i64;
                }
            }
            Ok(out)
        })
        .collect();
    let mut all = vec![-1i64; table.len()];
    for (s, r) in per.into_iter().enumerate() {
        let (a, b) = (bounds[s], bounds[s + 1]);
        all[a..b].copy_from_slice(&r?);
    }
    Ok(all)
}

/// What the segments of one group share: its ids sorted the Java way (`order[k]` = position in
/// the group of sorted slot `k`) and, under `CONSISTENT_HASH`, the ring over them.
struct SharedGroup {
    order: Vec<u32>,
    sorted: ConsumerList,
    ring: Option<(Result<ConsistentHashRing, AllocateError>, Charset)>,
}

impl SharedGroup {
    fn new(group: &ConsumerList, ring: Option<(u32, Charset)>) -> Self {
        let order = sort_order(group.ids());
        let sorted = ConsumerList::new(
            order
                .iter()
                .map(|&j| group.ids()[j as usize].clone())
                .collect(),
        );
        let ring =
            ring.map(|(v, charset)| (ConsistentHashRing::build(&sorted, v, charset), charset));
        SharedGroup {
            order,
            sorted,
            ring,
        }
    }

    /// [`owners`] of one segment over the sorted ids, on the prepared ring when there is one.
    fn owners(&self, strategy: &Strategy, view: &QueueView<'_>) -> Result<Vec<i64>, AllocateError> {
        let Some((ring, charset)) = &self.ring else {
            return owners(strategy, view, &self.sorted, None);
        };
        check_lists(view.len(), self.sorted.len())?;
        let mut o = ring.as_ref().map_err(Clone::clone)?.owners(view, *charset);
        unown_empty_ids(&mut o, &self.sorted);
        Ok(o)
    }
}

/// The ring a strategy routes on, if it is `CONSISTENT_HASH`: virtual nodes and charset.
fn ring_settings(strategy: &Strategy) -> Option<(u32, Charset)> {
    match strategy {
        Strategy::ConsistentHash {
            virtual_node_cnt,
            charset,
        } => Some((*virtual_node_cnt, *charset)),
        _ => None,
    }
}

/// The (consumer list, ring settings) that several segments use, prepared once on all cores
/// (`None` for one used by a single segment, prepared by that segment), and the index of each
/// segment's. Lists are told apart by reference, so equal lists passed separately are merely
/// prepared twice.
fn shared_groups(segments: &[Segment<'_>]) -> (Vec<Option<SharedGroup>>, Vec<usize>) {
    type RingSettings = Option<(u32, Charset)>;
    let mut index: HashMap<(usize, RingSettings), usize> = HashMap::default();
    let mut distinct: Vec<(&ConsumerList, RingSettings, usize)> = Vec::new();
    let of_segment = segments
        .iter()
        .map(|seg| {
            let ring = ring_settings(seg.strategy);
            let k = *index
                .entry((std::ptr::from_ref(seg.group) as usize, ring))
                .or_insert_with(|| {
                    distinct.push((seg.group, ring, 0));
                    distinct.len() - 1
                });
            distinct[k].2 += 1;
            k
        })
        .collect();
    let groups = distinct
        .par_iter()
        .map(|&(group, ring, uses)| (uses > 1).then(|| SharedGroup::new(group, ring)))
        .collect();
    (groups, of_segment)
}
