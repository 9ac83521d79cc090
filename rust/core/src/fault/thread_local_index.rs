//! Java's `ThreadLocalIndex`: the per-thread counters of queue selection (`sendWhichQueue`) and of
//! 4.x `pickOneAtLeast` (`whichItemWorst`). The counters are raw `i32`s owned by the caller: every
//! use stores `raw + 1` (wrapping) and yields `(raw + 1) & 0x7FFF_FFFF` ([`next_index`]).
//!
//! ```
//! use mqbalance_core::fault::next_index;
//! let mut raw = i32::MAX;
//! assert_eq!((next_index(&mut raw), raw), (0, i32::MIN)); // wraps, masked to 0
//! assert_eq!((next_index(&mut raw), raw), (1, i32::MIN + 1));
//! ```

/// `ThreadLocalIndex.incrementAndGet`: store `raw + 1`, return it masked non-negative.
#[inline]
pub fn next_index(raw: &mut i32) -> i32 {
    *raw = raw.wrapping_add(1);
    *raw & 0x7FFF_FFFF
}
