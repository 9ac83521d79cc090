//! `CONSISTENT_HASH_BOUNDED`: consistent hashing with bounded loads (Mirrokni, Thorup,
//! Zadimoghaddam, SODA 2018) on RocketMQ's own ring. Stateless: the result depends only on the
//! queue list, the consumer list and the parameters, so every client computes the same answer for
//! itself, like the other strategies.
//!
//! # The canonical algorithm (port this to Java letter for letter)
//!
//! Inputs: `mqAll` (n queues) and `cidAll` (c client ids), both as given to `allocate` (clients
//! sort them first, like every strategy); `virtualNodeCnt` V; the charset; `epsilon` ε (a finite
//! `double` ≥ 0, default 0.25).
//!
//! 1. **Ring.** Build exactly the ring of `CONSISTENT_HASH`: `ConsistentHashRouter` over `cidAll`
//!    with V virtual nodes `<clientId>-<replica>`, MD5 of the key's bytes, digest bytes 0..3 as a
//!    big-endian unsigned 32-bit key, sorted ascending (Java's `TreeMap`); a colliding later
//!    virtual node replaces the earlier one, a repeated id adds its replicas after the earlier
//!    ones (so it has double weight). An empty ring (V = 0) allocates nothing to anybody.
//! 2. **Cap.** k = the number of distinct client ids that own at least one ring node;
//!    `cap = (int) Math.min(n, Math.ceil((1.0 + epsilon) * n / k))` — IEEE `double`, evaluated
//!    left to right: `((1.0 + ε) · n) / k`, then `ceil`. Since `cap · k ≥ n`, every queue fits.
//! 3. **Order.** Hash every queue: `h(q)` = the same MD5 key of `MessageQueue.toString()`
//!    (`MessageQueue [topic=…, brokerName=…, queueId=…]`). Process the queues in ascending
//!    unsigned `h(q)`; equal hashes in their `mqAll` order (the Java `MessageQueue` order once
//!    sorted). The order does not depend on `cidAll`, nor on how `mqAll` was listed (up to those
//!    MD5 ties).
//! 4. **Home first.** Take the queues in that order; a queue whose `CONSISTENT_HASH` owner (the
//!    client of the first ring node whose key is ≥ `h(q)`, wrapping to the smallest key — Java's
//!    `routeNode`) holds fewer than `cap` queues goes to it, and that count goes up by one;
//!    otherwise the queue is set aside, in order.
//! 5. **Overflow walks.** Then take the set-aside queues in their order; each starts at the same
//!    ring node and walks clockwise (ascending keys, wrapping) to the first node whose client holds
//!    fewer than `cap` queues; that client gets it, and its count goes up by one.
//! 6. `allocate(currentCID)` returns the queues its id got, in `mqAll` order (after `check()`, as
//!    every strategy: a non-member gets an empty list).
//!
//! Properties: nobody holds more than `cap` (≤ ⌈(1+ε)·n/k⌉); a queue stays on its
//! `CONSISTENT_HASH` owner unless that owner has more than `cap` of them; with ε large enough that
//! `cap = n` (e.g. ε ≥ k − 1) nobody is ever full and the result is exactly `CONSISTENT_HASH`'s.
//! A join or leave moves the queues of the member that came or went, plus overflow queues that find
//! room elsewhere (when the cap changes with the member count, or an owner's overflow shrinks).
//! Home-first (rather than the paper's one pass in which overflow can take another client's room
//! and push *its* queues on) moved 5–25 % fewer queues per join or leave in our measurements.
//!
//! Implementation: the MD5 work and the ring look-ups run on all cores; the passes are sequential;
//! the walk skips full clients in amortised near-constant time (a "next live node" union-find over ring
//! positions: when a client fills up, its nodes are linked to their successors).
//!
//! ```
//! use mqbalance_core::allocate::bounded::{capacity, owners, Epsilon};
//! use mqbalance_core::{Charset, ConsumerList, QueueTable};
//! assert_eq!(capacity(64, 8, Epsilon::new(0.25).unwrap()), 10); // ⌈1.25 · 64 / 8⌉
//! let q = QueueTable::from_rows((0..64).map(|i| ("TopicTest", "broker-a", i)));
//! let g = ConsumerList::new((0..8).map(|i| format!("10.0.0.{i}@DEFAULT")).collect());
//! let o = owners(10, Charset::Utf8, Epsilon::new(0.25).unwrap(), &q.all(), &g).unwrap();
//! assert!((0..8).all(|c| o.iter().filter(|&&x| x == c).count() <= 10));
//! ```

use rayon::prelude::*;

use crate::error::AllocateError;
use crate::queues::{ConsumerList, QueueView};
use crate::ring::{queue_hashes, Charset, ConsistentHashRing};

/// Default ε of `CONSISTENT_HASH_BOUNDED`.
pub const DEFAULT_EPSILON: f64 = 0.25;

/// A validated ε: finite and ≥ 0 (so `Eq` is sound).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Epsilon(f64);

impl Eq for Epsilon {}

impl Epsilon {
    /// Check ε: NaN or ±∞ → [`AllocateError::InvalidEpsilon`]; negative (including -0.0's
    /// negative neighbours, not -0.0 itself) → [`AllocateError::EpsilonTooSmall`] (minimum 0).
    pub fn new(value: f64) -> Result<Self, AllocateError> {
        if !value.is_finite() {
            return Err(AllocateError::InvalidEpsilon {
                bits: value.to_bits(),
            });
        }
        if value < 0.0 {
            return Err(AllocateError::EpsilonTooSmall {
                bits: value.to_bits(),
            });
        }
        Ok(Epsilon(value + 0.0)) // -0.0 → 0.0
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

/// The cap: `min(n, ceil(((1 + ε) · n) / k))` in IEEE double arithmetic (k ≥ 1).
// Java converts the int counts to double the same way; counts below 2^53 convert exactly.
#[allow(clippy::cast_precision_loss)]
pub fn capacity(n: usize, k: usize, epsilon: Epsilon) -> usize {
    let c = ((1.0 + epsilon.0) * n as f64 / k.max(1) as f64).ceil();
    if c >= n as f64 {
        n
    } else {
        c as usize
    }
}

/// First live ring position at or after `i` (`len` = none), with path halving.
#[inline]
fn find(next: &mut [u32], mut i: usize) -> usize {
    while next[i] as usize != i {
        let up = next[next[i] as usize];
        next[i] = up;
        i = up as usize;
    }
    i
}

/// Whole-group owners (slot of the owning id's first occurrence; `-1` for all when V = 0).
pub fn owners(
    virtual_node_cnt: u32,
    charset: Charset,
    epsilon: Epsilon,
    queues: &QueueView<'_>,
    group: &ConsumerList,
) -> Result<Vec<i64>, AllocateError> {
    let ring = ConsistentHashRing::build(group, virtual_node_cnt, charset)?;
    Ok(walk(&ring, queues, charset, epsilon, group.len()))
}

/// Steps 2–4 on a built ring.
pub(crate) fn walk(
    ring: &ConsistentHashRing,
    queues: &QueueView<'_>,
    charset: Charset,
    epsilon: Epsilon,
    slots: usize,
) -> Vec<i64> {
    let n = queues.len();
    if ring.is_empty() {
        return vec![-1; n];
    }
    let r = ring.len();
    // Ring positions of every owner slot (CSR), and the number of distinct owners.
    let mut count = vec![0u32; slots + 1];
    for i in 0..r {
        count[ring.node_owner(i) as usize + 1] += 1;
    }
    let k = count.iter().skip(1).filter(|&&x| x > 0).count();
    for s in 0..slots {
        count[s + 1] += count[s];
    }
    let mut fill = count.clone();
    let mut nodes = vec![0u32; r];
    for i in 0..r {
        let o = ring.node_owner(i) as usize;
        nodes[fill[o] as usize] = i as u32;
        fill[o] += 1;
    }
    let cap = capacity(n, k, epsilon);

    let hashes = queue_hashes(queues, charset);
    let starts: Vec<u32> = hashes
        .par_iter()
        .map(|&h| ring.position(h) as u32)
        .collect();
    let mut order: Vec<(u32, u32)> = hashes
        .iter()
        .enumerate()
        .map(|(q, &h)| (h, q as u32))
        .collect();
    order.par_sort_unstable(); // (hash, position): unique keys, so the order is total

    let mut next: Vec<u32> = (0..=r as u32).collect(); // next[r] = r: the "none" sentinel
    let mut load = vec![0usize; slots];
    let mut out = vec![-1i64; n];
    let mut overflow = Vec::new();
    let mut take = |o: usize, q: u32, next: &mut [u32], out: &mut [i64]| {
        out[q as usize] = o as i64;
        load[o] += 1;
        if load[o] == cap {
            for &i in &nodes[count[o] as usize..count[o + 1] as usize] {
                next[i as usize] = i + 1;
            }
        }
    };
    // Home first: the CONSISTENT_HASH owner, while it has room.
    for &(_, q) in &order {
        let o = ring.node_owner(starts[q as usize] as usize) as usize;
        // A node is live (its own successor) exactly while its client has room.
        if next[starts[q as usize] as usize] as usize == starts[q as usize] as usize {
            take(o, q, &mut next, &mut out);
        } else {
            overflow.push(q);
        }
    }
    // Overflow walks clockwise to the first client with room.
    for q in overflow {
        let mut p = find(&mut next, starts[q as usize] as usize);
        if p == r {
            p = find(&mut next, 0);
        }
        // `cap · k ≥ n` leaves a live node for every queue; `p < r` always holds here.
        take(ring.node_owner(p) as usize, q, &mut next, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::QueueTable;

    #[test]
    fn epsilon_is_checked() {
        assert!(matches!(
            Epsilon::new(f64::NAN),
            Err(AllocateError::InvalidEpsilon { .. })
        ));
        assert!(matches!(
            Epsilon::new(f64::INFINITY),
            Err(AllocateError::InvalidEpsilon { .. })
        ));
        assert!(matches!(
            Epsilon::new(-0.01),
            Err(AllocateError::EpsilonTooSmall { .. })
        ));
        assert_eq!(
            Epsilon::new(-0.0).unwrap().get().to_bits(),
            0.0f64.to_bits()
        );
    }

    #[test]
    fn cap_is_the_ceiling_and_at_most_n() {
        let e = |x| Epsilon::new(x).unwrap();
        assert_eq!(capacity(10, 4, e(0.0)), 3);
        assert_eq!(capacity(10, 4, e(0.25)), 4); // 3.125 → 4
        assert_eq!(capacity(10, 4, e(1e300)), 10);
        assert_eq!(capacity(3, 5, e(0.25)), 1);
    }

    #[test]
    fn huge_epsilon_is_consistent_hash() {
        let q =
            QueueTable::from_rows((0..200).map(|i| ("T", if i % 2 == 0 { "a" } else { "b" }, i)));
        let g = ConsumerList::new((0..7).map(|i| format!("c{i}")).collect());
        let ch = crate::allocate::consistent_hash::owners(10, Charset::Utf8, &q.all(), &g).unwrap();
        let b = owners(10, Charset::Utf8, Epsilon(1e9), &q.all(), &g).unwrap();
        assert_eq!(ch, b);
    }

    #[test]
    fn epsilon_zero_caps_at_the_ceiling_of_the_average() {
        let q = QueueTable::from_rows((0..103).map(|i| ("T", "b", i)));
        let g = ConsumerList::new((0..10).map(|i| format!("c{i}")).collect());
        let o = owners(10, Charset::Utf8, Epsilon(0.0), &q.all(), &g).unwrap();
        let mut load = [0; 10];
        for &x in &o {
            load[x as usize] += 1;
        }
        assert!(load.iter().all(|&l| l <= 11), "{load:?}");
        assert_eq!(load.iter().sum::<i32>(), 103);
    }
}
