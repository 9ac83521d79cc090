//! `AVG_BY_CIRCLE` (`AllocateMessageQueueAveragelyByCircle`): queue `k` goes to slot `k mod c`.
//!
//! ```
//! use mqbalance_core::{allocate::circle::owners, ConsumerList};
//! let g = ConsumerList::new(vec!["a".into(), "a".into()]); // duplicated id
//! assert_eq!(owners(4, &g), vec![0, -1, 0, -1]);             // slot 1's queues are stranded
//! ```

use crate::queues::ConsumerList;

/// Whole-group owners; a later slot of a duplicated id owns nothing.
pub fn owners(n: usize, group: &ConsumerList) -> Vec<i64> {
    let c = group.len();
    (0..n)
        .map(|k| {
            let j = k % c;
            if group.is_first(j) {
                j as i64
            } else {
                -1
            }
        })
        .collect()
}

/// [`push_owners`] for `queue_ids.len()` queues, each queue id checked in the same pass: the
/// owners and the or of every id's [`java_int_excess`](crate::queues::java_int_excess).
pub fn owners_checked(queue_ids: &[i64], slots: &[i64]) -> (Vec<i64>, u64) {
    use crate::queues::java_int_excess;
    let mut out = Vec::with_capacity(queue_ids.len());
    let mut outside = 0u64;
    for lap in queue_ids.chunks(slots.len().max(1)) {
        let mut acc = 0u64;
        out.extend(lap.iter().zip(slots).map(|(&q, &s)| {
            acc |= java_int_excess(q);
            s
        }));
        outside |= acc;
    }
    (out, outside)
}

/// [`owners`] from each slot's owner (see [`super::slot_owners`]), appended to `out`: the slots'
/// owners copied round after round.
pub fn push_owners(out: &mut Vec<i64>, n: usize, slots: &[i64]) {
    let base = out.len();
    out.reserve(n);
    if slots.is_empty() {
        out.resize(base + n, -1);
        return;
    }
    while out.len() - base < n {
        let take = slots.len().min(n - (out.len() - base));
        out.extend_from_slice(&slots[..take]);
    }
}
