//! Invariants of the core, by proptest: the whole-group view is the per-client call, sorting
//! makes input order irrelevant, and balanced strategies are balanced.
//!
//! Excluded inputs: empty strings as ids (the Java per-client call throws for them, tested in
//! Python) and empty lists (errors, tested in Python and in the doc examples).

#![allow(clippy::unwrap_used)]
#![allow(clippy::cast_precision_loss)] // small test sizes: exact in f64

use std::collections::BTreeSet;

use mqbalance_core::allocate::{self, RoomMap};
use mqbalance_core::{Charset, ConsumerList, QueueTable, Strategy};
use proptest::prelude::*;

const TOPICS: &[&str] = &["T", "TopicTest", "主题", "😀t", "\u{FF01}x"];
const BROKERS: &[&str] = &[
    "broker-a",
    "hz@b1",
    "sh@b2",
    "gz@b3",
    "\u{FF01}@b",
    "😀@b",
    "a@b@c",
];
const IDS: &[&str] = &[
    "10.0.0.7@DEFAULT",
    "hz@c1",
    "hz@c2",
    "sh@c3",
    "😀@c",
    "\u{FF01}@c",
    "gz",
];

fn strategies() -> Vec<Strategy> {
    vec![
        Strategy::Avg,
        Strategy::AvgByCircle,
        Strategy::consistent_hash(4, Charset::Utf8).unwrap(),
        Strategy::MachineRoom {
            consumer_idcs: Some(BTreeSet::from(["hz".to_string(), "sh".to_string()])),
        },
        Strategy::nearby(Strategy::Avg).unwrap(),
        Strategy::nearby(Strategy::consistent_hash(3, Charset::Utf8).unwrap()).unwrap(),
        Strategy::consistent_hash_bounded(4, Charset::Utf8, 0.25).unwrap(),
        Strategy::consistent_hash_bounded(3, Charset::Utf8, 0.0).unwrap(),
        Strategy::nearby(Strategy::consistent_hash_bounded(5, Charset::Utf8, 0.1).unwrap())
            .unwrap(),
    ]
}

fn inputs(
) -> impl proptest::strategy::Strategy<Value = (Vec<(usize, usize, i32)>, Vec<usize>, usize)> {
    (
        prop::collection::vec((0..TOPICS.len(), 0..BROKERS.len(), 0..30i32), 1..60),
        prop::collection::vec(0..IDS.len(), 1..8),
        0..9usize,
    )
}

fn build(rows: &[(usize, usize, i32)], ids: &[usize]) -> (QueueTable, ConsumerList) {
    let table = QueueTable::from_rows(rows.iter().map(|&(t, b, q)| (TOPICS[t], BROKERS[b], q)));
    (
        table,
        ConsumerList::new(ids.iter().map(|&i| IDS[i].to_string()).collect()),
    )
}

proptest! {
    #[test]
    fn owners_and_assign_are_the_per_client_calls((rows, ids, s) in inputs()) {
        let strategy = &strategies()[s];
        let (table, group) = build(&rows, &ids);
        let rooms = RoomMap::from_prefix(&table, &group, "@");
        let view = table.all();
        let owners = allocate::owners(strategy, &view, &group, Some(&rooms)).unwrap();
        let lists = allocate::assign(strategy, &view, &group, Some(&rooms)).unwrap();
        for j in 0..group.len() {
            let me = &group.ids()[j];
            let mine = allocate::allocate(strategy, Some(me), &view, &group, Some(&rooms)).unwrap();
            let first = group.index_of(me).unwrap();
            prop_assert_eq!(&lists[first], &mine);
            let mut from_owners: Vec<u32> = (0..owners.len() as u32).filter(|&k| owners[k as usize] == first as i64).collect();
            let mut sorted_mine = mine.clone();
            sorted_mine.sort_unstable();
            from_owners.sort_unstable();
            prop_assert_eq!(from_owners, sorted_mine);
        }
    }

    #[test]
    fn sorting_makes_input_order_irrelevant((rows, ids, s) in inputs(), seed in any::<u64>()) {
        let strategy = &strategies()[s];
        let (table, group) = build(&rows, &ids);
        let rooms = RoomMap::from_prefix(&table, &group, "@");
        let base = allocate::rebalance_owners(strategy, &table, &group, Some(&rooms)).unwrap();
        // Reverse-rotate both lists by a seed-dependent amount.
        let rot = (seed as usize) % rows.len();
        let mut rows2: Vec<_> = rows.iter().rev().copied().collect();
        rows2.rotate_left(rot);
        let ids2: Vec<_> = ids.iter().rev().copied().collect();
        let (table2, group2) = build(&rows2, &ids2);
        let rooms2 = RoomMap::from_prefix(&table2, &group2, "@");
        let moved = allocate::rebalance_owners(strategy, &table2, &group2, Some(&rooms2)).unwrap();
        // Compare owner *ids* per queue (row positions and id positions both moved). Duplicate
        // queues are interchangeable, so compare the multiset of (queue, owner id).
        let key = |t: &QueueTable, g: &ConsumerList, o: &[i64]| {
            let mut v: Vec<(String, Option<String>)> = (0..t.len()).map(|k| (t.key(k), (o[k] >= 0).then(|| g.ids()[o[k] as usize].clone()))).collect();
            v.sort();
            v
        };
        prop_assert_eq!(key(&table, &group, &base), key(&table2, &group2, &moved));
    }

    #[test]
    fn avg_and_circle_are_balanced(n in 1usize..500, c in 1usize..50) {
        let table = QueueTable::from_rows((0..n as i32).map(|q| ("T", "b", q)));
        let group = ConsumerList::new((0..c).map(|j| format!("c{j}")).collect());
        for s in [Strategy::Avg, Strategy::AvgByCircle] {
            let owners = allocate::owners(&s, &table.all(), &group, None).unwrap();
            prop_assert!(owners.iter().all(|&o| o >= 0));
            let mut counts = vec![0usize; c];
            for &o in &owners { counts[o as usize] += 1; }
            let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            prop_assert!(hi - lo <= 1);
        }
    }
}

fn group_of(c: usize) -> ConsumerList {
    ConsumerList::new(
        (0..c)
            .map(|j| format!("10.0.{}.{}@{j}", j / 250, j % 250))
            .collect(),
    )
}

fn queues_of(n: usize) -> QueueTable {
    QueueTable::from_rows((0..n).map(|q| {
        (
            "TopicTest",
            if q % 2 == 0 { "broker-a" } else { "broker-b" },
            (q / 2) as i32,
        )
    }))
}

fn counts(owners: &[i64], c: usize) -> Vec<usize> {
    let mut out = vec![0usize; c];
    for &o in owners {
        out[o as usize] += 1;
    }
    out
}

/// The most queues a balanced assignment can leave where they were, from the previous holdings
/// `held` of the current members (an upper bound by counting: each member keeps at most its quota,
/// and only `n mod m` quotas are the larger one).
fn max_kept(n: usize, held: &[usize]) -> usize {
    let m = held.len();
    let (q, extra) = (n / m, n % m);
    held.iter().map(|&h| h.min(q)).sum::<usize>()
        + held.iter().filter(|&&h| h > q).count().min(extra)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn bounded_cap_holds_and_every_queue_is_owned(
        n in 1usize..4000, c in 1usize..300, v in 1u32..16, e in prop::sample::select(vec![0.0, 0.05, 0.25, 1.0, 3.0]),
    ) {
        let (table, group) = (queues_of(n), group_of(c));
        let s = Strategy::consistent_hash_bounded(i64::from(v), Charset::Utf8, e).unwrap();
        let owners = allocate::owners(&s, &table.all(), &group, None).unwrap();
        prop_assert!(owners.iter().all(|&o| o >= 0));
        let cap = ((1.0 + e) * n as f64 / c as f64).ceil() as usize;
        prop_assert!(counts(&owners, c).into_iter().all(|x| x <= cap));
    }

    #[test]
    fn bounded_without_a_binding_cap_is_consistent_hash(n in 1usize..2000, c in 1usize..100, v in 0u32..12) {
        let (table, group) = (queues_of(n), group_of(c));
        let ch = Strategy::consistent_hash(i64::from(v), Charset::Utf8).unwrap();
        let b = Strategy::consistent_hash_bounded(i64::from(v), Charset::Utf8, c as f64).unwrap();
        prop_assert_eq!(
            allocate::owners(&ch, &table.all(), &group, None).unwrap(),
            allocate::owners(&b, &table.all(), &group, None).unwrap()
        );
    }

    #[test]
    fn sticky_is_balanced_and_keeps_the_most_possible(
        n in 1usize..3000, c in 1usize..200, prev_c in 1usize..250, seed in any::<u64>(), holes in 0u64..4,
    ) {
        // A previous assignment over up to `prev_c` ids (some not in the group any more), some
        // queues unowned.
        let group = group_of(c);
        let mut x = seed | 1;
        let previous: Vec<i64> = (0..n).map(|_| {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            if x % 8 < holes { -1 } else { (x % prev_c as u64) as i64 }
        }).collect();
        let in_group: Vec<i64> = previous.iter().map(|&p| if (p as usize) < c && p >= 0 { p } else { -1 }).collect();
        let s = Strategy::Sticky;
        let table = queues_of(n);
        let owners = allocate::owners_with_previous(&s, &table.all(), &group, None, Some(&in_group)).unwrap();
        let sizes = counts(&owners, c);
        prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        let held = counts(&in_group.iter().copied().filter(|&p| p >= 0).collect::<Vec<_>>(), c);
        let kept = owners.iter().zip(&in_group).filter(|(o, p)| o == p).count();
        prop_assert_eq!(kept, max_kept(n, &held));
    }

    #[test]
    fn sticky_moves_no_more_than_brute_force(n in 1usize..7, c in 1usize..4, prev in prop::collection::vec(-1i64..4, 7)) {
        let group = group_of(c);
        let previous: Vec<i64> = prev[..n].iter().map(|&p| if p < c as i64 { p } else { -1 }).collect();
        let owners = allocate::owners_with_previous(&Strategy::Sticky, &queues_of(n).all(), &group, None, Some(&previous)).unwrap();
        let moved = |o: &[i64]| o.iter().zip(&previous).filter(|(a, p)| **p >= 0 && a != p).count();
        let mut best = usize::MAX;
        for code in 0..c.pow(n as u32) {
            let cand: Vec<i64> = (0..n).map(|k| ((code / c.pow(k as u32)) % c) as i64).collect();
            let sz = counts(&cand, c);
            if sz.iter().max().unwrap() - sz.iter().min().unwrap() <= 1 {
                best = best.min(moved(&cand));
            }
        }
        prop_assert_eq!(moved(&owners), best);
    }
}

#[test]
fn sticky_first_run_is_avg_and_sticky_needs_a_previous_assignment() {
    let (table, group) = (queues_of(37), group_of(5));
    let first = allocate::owners_with_previous(
        &Strategy::Sticky,
        &table.all(),
        &group,
        None,
        Some(&[-1; 37]),
    )
    .unwrap();
    assert_eq!(
        first,
        allocate::owners(&Strategy::Avg, &table.all(), &group, None).unwrap()
    );
    assert!(matches!(
        allocate::allocate(
            &Strategy::Sticky,
            Some("10.0.0.0@0"),
            &table.all(),
            &group,
            None
        ),
        Err(mqbalance_core::AllocateError::PreviousRequired { .. })
    ));
    assert!(matches!(
        allocate::owners(&Strategy::Sticky, &table.all(), &group, None),
        Err(mqbalance_core::AllocateError::PreviousRequired { .. })
    ));
}

proptest! {
    /// Segments that share a consumer list (and so its sorted order and ring) get what each would
    /// get in a call of its own.
    #[test]
    fn a_batch_sharing_groups_is_each_segment_alone(
        segs in prop::collection::vec(
            (prop::collection::vec((0..TOPICS.len(), 0..BROKERS.len(), 0..30i32), 1..25), 0..3usize, 0..4usize),
            1..8,
        ),
        lists in prop::collection::vec(prop::collection::vec(0..IDS.len(), 1..8), 3),
    ) {
        use mqbalance_core::allocate::batch::{owners_by_segment, Segment};
        let kinds = [
            Strategy::Avg,
            Strategy::AvgByCircle,
            Strategy::consistent_hash(4, Charset::Utf8).unwrap(),
            Strategy::consistent_hash(7, Charset::Iso8859_1).unwrap(),
        ];
        let groups: Vec<ConsumerList> = lists
            .iter()
            .map(|ids| ConsumerList::new(ids.iter().map(|&i| IDS[i].to_string()).collect()))
            .collect();
        let rows: Vec<(usize, usize, i32)> = segs.iter().flat_map(|(r, _, _)| r.iter().copied()).collect();
        let table = QueueTable::from_rows(rows.iter().map(|&(t, b, q)| (TOPICS[t], BROKERS[b], q)));
        let mut bounds = vec![0usize];
        for (r, _, _) in &segs {
            bounds.push(bounds.last().unwrap() + r.len());
        }
        let segments: Vec<Segment<'_>> = segs
            .iter()
            .map(|&(_, g, k)| Segment { strategy: &kinds[k], group: &groups[g] })
            .collect();
        let batch = owners_by_segment(&table, &bounds, &segments).unwrap();
        for (s, (r, g, k)) in segs.iter().enumerate() {
            let alone = QueueTable::from_rows(r.iter().map(|&(t, b, q)| (TOPICS[t], BROKERS[b], q)));
            let expected = allocate::rebalance_owners(&kinds[*k], &alone, &groups[*g], None).unwrap();
            prop_assert_eq!(&batch[bounds[s]..bounds[s + 1]], &expected[..]);
        }
    }
}

proptest! {
    /// The allocation-free writer (borrowed ids, caller's output) is `owners_of_count`, duplicated
    /// and empty ids included.
    #[test]
    fn written_owners_are_owners_of_count(
        n in 1..80usize,
        ids in prop::collection::vec(prop::sample::select(vec!["", "a", "b", "c", "😀", "a@b"]), 1..12),
        sorted in any::<bool>(),
    ) {
        let mut ids: Vec<&str> = ids;
        if sorted {
            ids.sort_unstable();
        }
        let group = ConsumerList::new(ids.iter().map(|s| (*s).to_string()).collect());
        let first = mqbalance_core::queues::first_slots(&ids);
        prop_assert_eq!(&first[..], group.first_slots());
        let empty = ids.iter().position(|s| s.is_empty());
        for strategy in [Strategy::Avg, Strategy::AvgByCircle] {
            let want = allocate::owners_of_count(&strategy, n, &group, None).unwrap();
            let out = allocate::owners_of_first_slots(&strategy, n, &first, empty).unwrap();
            prop_assert_eq!(&out, &want);
            let qids: Vec<i64> = (0..n as i64).collect();
            let checked = allocate::owners_of_first_slots_checked(&strategy, &qids, &first, empty).unwrap();
            prop_assert_eq!(checked, Some(want));
            let mut bad = qids.clone();
            bad[n / 2] = if n % 2 == 0 { 1 << 31 } else { -(1 << 31) - 1 };
            prop_assert_eq!(allocate::owners_of_first_slots_checked(&strategy, &bad, &first, empty).unwrap(), None);
        }
    }
}
