//! Many groups in one call: the rows of a [`QueueTable`] split into contiguous segments, each a
//! (group, topic) with its own strategy and consumers, every segment sorted and assigned the
//! `RebalanceImpl` way. Java ranks of the string dictionaries are computed once for the batch, and
//! segments run on all cores. This is what a Spark executor calls for a whole bucket of groups.
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

use super::{owners, Strategy};
use crate::error::AllocateError;
use crate::order::{java_ranks, sort_order};
use crate::queues::{ConsumerList, QueueTable};

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
            let cperm = sort_order(seg.group.ids());
            let sorted = ConsumerList::new(
                cperm
                    .iter()
                    .map(|&j| seg.group.ids()[j as usize].clone())
                    .collect(),
            );
            let o = owners(seg.strategy, &table.view(&rows), &sorted, None).map_err(|e| (s, e))?;
            let mut out = vec![-1i64; b - a];
            for (&row, &owner) in rows.iter().zip(&o) {
                if owner >= 0 {
                    out[row as usize - a] =
                        seg.group.first_of(cperm[owner as usize] as usize) as i64;
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
