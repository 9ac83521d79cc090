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
