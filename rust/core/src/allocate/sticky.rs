//! `STICKY`: balanced, and moving the fewest queues possible from a previous assignment — for
//! whoever computes the whole group (a leader, a broker-side or what-if tool). Not a per-client
//! strategy: a client alone does not know who held what.
//!
//! The problem is Kafka's sticky assignor with identical subscriptions, so this reuses its core
//! ([`crate::assign::sticky`]): members are the *distinct* ids in list order. With `n` queues and
//! `m` distinct ids every member gets `⌊n/m⌋` or `⌈n/m⌉` queues; the `n mod m` larger quotas go
//! to the members that held the most before (ties: list order); every member keeps the first of
//! its previous queues (list order) up to its quota; the freed and previously unowned queues are
//! dealt out in list order to the members below quota, in list order. The number of queues kept is
//! the maximum any balanced assignment can keep. With no previous owner at all (a first run) the
//! result is `AVG` over the distinct ids: contiguous blocks, the first `n mod m` one larger.
//!
//! ```
//! use mqbalance_core::allocate::sticky::owners;
//! use mqbalance_core::ConsumerList;
//! let g = ConsumerList::new(vec!["a".into(), "b".into(), "c".into()]);
//! assert_eq!(owners(7, &g, &[-1; 7]).unwrap(), vec![0, 0, 0, 1, 1, 2, 2]); // first run = AVG
//! // "b" left a previous split of a/b; "c" joins: a keeps 3, c takes b's 2 and one of... a's extra.
//! let prev = [0, 0, 0, 0, 1, 1, 1];
//! let next = owners(7, &ConsumerList::new(vec!["a".into(), "c".into()]), &[0, 0, 0, 0, -1, -1, -1]).unwrap();
//! assert_eq!(next, vec![0, 0, 0, 0, 1, 1, 1]); // nothing a held moves
//! # let _ = prev;
//! ```

use crate::assign::sticky::constrained;
use crate::error::AllocateError;
use crate::queues::ConsumerList;

/// Whole-group owners (slot of the owning id's first occurrence). `previous[k]` is the slot (a
/// position in `group`) of queue `k`'s previous owner, or negative for nobody; a repeated id's
/// later slots count as its first.
pub fn owners(n: usize, group: &ConsumerList, previous: &[i64]) -> Result<Vec<i64>, AllocateError> {
    if previous.len() != n {
        return Err(AllocateError::LengthMismatch {
            what: "previous owners",
            got: previous.len(),
            expected: n,
        });
    }
    let c = group.len();
    let members: Vec<usize> = (0..c).filter(|&j| group.is_first(j)).collect();
    let mut member_of = vec![u32::MAX; c];
    for (m, &j) in members.iter().enumerate() {
        member_of[j] = m as u32;
    }
    let mut owner = Vec::with_capacity(n);
    for (row, &p) in previous.iter().enumerate() {
        if p < 0 {
            owner.push(-1);
        } else if (p as u64) < c as u64 {
            owner.push(member_of[group.first_of(p as usize)] as i32);
        } else {
            return Err(AllocateError::InvalidCode {
                what: "previous owners",
                row,
                code: u32::try_from(p).unwrap_or(u32::MAX),
                dict_len: c,
            });
        }
    }
    let order: Vec<u32> = (0..members.len() as u32).collect();
    let holder = constrained(n, &owner, &order, &order);
    Ok(holder
        .into_iter()
        .map(|h| {
            if h < 0 {
                -1
            } else {
                members[h as usize] as i64
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(ids: &[&str]) -> ConsumerList {
        ConsumerList::new(ids.iter().map(|s| (*s).to_string()).collect())
    }

    #[test]
    fn first_run_is_avg() {
        for n in 1..20 {
            for c in 1..8 {
                let group = ConsumerList::new((0..c).map(|i| format!("c{i}")).collect());
                assert_eq!(
                    owners(n, &group, &vec![-1; n]).unwrap(),
                    crate::allocate::avg::owners(n, &group)
                );
            }
        }
    }

    #[test]
    fn a_join_moves_only_what_the_newcomer_gets() {
        let before = owners(10, &g(&["a", "b"]), &[-1; 10]).unwrap();
        let after = owners(10, &g(&["a", "b", "c"]), &before).unwrap();
        let moved = before.iter().zip(&after).filter(|(x, y)| x != y).count();
        assert_eq!(moved, 3); // ⌊10/3⌋
    }

    #[test]
    fn bad_previous_is_refused() {
        assert!(matches!(
            owners(2, &g(&["a"]), &[0]),
            Err(AllocateError::LengthMismatch { .. })
        ));
        assert!(matches!(
            owners(1, &g(&["a"]), &[3]),
            Err(AllocateError::InvalidCode { .. })
        ));
    }

    #[test]
    fn duplicates_count_once() {
        let o = owners(4, &g(&["a", "b", "a"]), &[2, 2, 2, 2]).unwrap();
        assert_eq!(o, vec![0, 0, 1, 1]);
    }
}
