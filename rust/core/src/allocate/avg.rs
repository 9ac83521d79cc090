//! `AVG` (`AllocateMessageQueueAveragely`): contiguous blocks, the first `n mod c` consumers get
//! one extra queue; when `n <= c`, consumer `i < n` gets queue `i`.
//!
//! ```
//! use mqbalance_core::allocate::avg::block;
//! // 10 queues, 4 consumers: sizes 3, 3, 2, 2.
//! assert_eq!((0..4).map(|i| block(10, 4, i)).collect::<Vec<_>>(), vec![(0, 3), (3, 3), (6, 2), (8, 2)]);
//! assert_eq!(block(2, 3, 2), (2, 0)); // more consumers than queues: the last gets nothing
//! ```

use crate::queues::ConsumerList;

/// `(start, take)` of slot `i` among `c` consumers over `n` queues (`take` may be 0).
#[inline]
pub fn block(n: usize, c: usize, i: usize) -> (usize, usize) {
    let m = n % c;
    let size = if n <= c {
        1
    } else if m > 0 && i < m {
        n / c + 1
    } else {
        n / c
    };
    let start = if m > 0 && i < m {
        i * size
    } else {
        i * size + m
    };
    (start.min(n), size.min(n.saturating_sub(start)))
}

/// Whole-group owners. A duplicated id behaves as its first slot in every client, so the blocks of
/// later slots with that id are consumed by nobody (the duplicated-client-id hazard).
pub fn owners(n: usize, group: &ConsumerList) -> Vec<i64> {
    let c = group.len();
    // The blocks of slots 0..c are contiguous and in slot order: each row is written once.
    let mut out = Vec::with_capacity(n);
    for j in 0..c {
        let (start, take) = block(n, c, j);
        debug_assert_eq!(start, out.len());
        let owner = if group.is_first(j) { j as i64 } else { -1 };
        out.resize(start + take, owner);
    }
    out.resize(n, -1);
    out
}

/// [`owners`] from each slot's owner (`slots[j]`: `j`, or `-1` for a slot that owns nothing, see
/// [`super::slot_owners`]), appended to `out`: each row written once.
pub fn push_owners(out: &mut Vec<i64>, n: usize, slots: &[i64]) {
    let (base, c) = (out.len(), slots.len());
    out.reserve(n);
    for (j, &owner) in slots.iter().enumerate() {
        let (start, take) = block(n, c, j);
        if take > 0 {
            out.resize(base + start + take, owner);
        }
    }
    out.resize(base + n, -1);
}

/// [`push_owners`] for `queue_ids.len()` queues, each queue id checked in the same pass: the
/// owners and the or of every id's [`java_int_excess`](crate::queues::java_int_excess) (0: all
/// are Java ints). Each block is one run reading its ids and writing its owner.
pub fn owners_checked(queue_ids: &[i64], slots: &[i64]) -> (Vec<i64>, u64) {
    use crate::queues::java_int_excess;
    let (n, c) = (queue_ids.len(), slots.len());
    let mut out = Vec::with_capacity(n);
    let mut outside = 0u64;
    for (j, &owner) in slots.iter().enumerate() {
        let (start, take) = block(n, c, j);
        if take == 0 {
            continue;
        }
        let mut acc = 0u64;
        out.extend(queue_ids[start..start + take].iter().map(|&q| {
            acc |= java_int_excess(q);
            owner
        }));
        outside |= acc;
    }
    let mut acc = 0u64;
    out.extend(queue_ids[out.len()..].iter().map(|&q| {
        acc |= java_int_excess(q);
        -1
    }));
    (out, outside | acc)
}
