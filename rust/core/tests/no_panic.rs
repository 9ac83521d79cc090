//! The core's entry points on arbitrary values: every call returns `Ok` or a typed error, never a
//! panic (an overflow, an index out of bounds, an `unwrap`) and never an allocation failure.
//!
//! Excluded inputs, and why: sizes are kept small (queue counts, sends, partitions) because a
//! request for billions of entries is refused before the core by the Python boundary's memory
//! budget — under Linux overcommit a fallible reservation of tens of GB can succeed and only fail
//! when touched, so the core cannot be the guard for those. Sizes whose byte count overflows
//! (`sends = usize::MAX`) are tested here: they must come back as `TooLarge`.

#![allow(clippy::unwrap_used)]

use mqbalance_core::allocate::batch::{owners_by_segment, Segment};
use mqbalance_core::allocate::{self};
use mqbalance_core::assign::{user_data, Assignor, Cluster, Member};
use mqbalance_core::fault::{
    simulate, BrokerModel, FaultError, LatencyTable, MQFaultStrategy, QueueData, Semantics,
    SimConfig, TopicPublishInfo,
};
use mqbalance_core::{Charset, ConsumerList, QueueTable, Strategy};
use proptest::prelude::*;
use proptest::strategy::Strategy as _;

fn table(n: usize) -> QueueTable {
    QueueTable::from_rows((0..n).map(|q| ("T", "b", q as i32)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any virtual node count, charset and epsilon: a strategy or a typed error; then a group of
    /// up to 4 consumers over up to 20 queues: owners or a typed error (ring too large).
    #[test]
    fn strategies_take_any_parameters(vnodes in any::<i64>(), eps in any::<f64>(), queues in 0..20usize, ids in 0..5usize) {
        let group = ConsumerList::new((0..ids).map(|i| format!("c{i}")).collect());
        let t = table(queues);
        for s in [
            Strategy::consistent_hash(vnodes, Charset::Utf8),
            Strategy::consistent_hash_bounded(vnodes.clamp(-5, 40), Charset::Iso8859_1, eps),
            Strategy::consistent_hash_bounded(vnodes, Charset::UsAscii, 0.25),
        ]
        .into_iter()
        .flatten()
        {
            let _ = allocate::owners(&s, &t.all(), &group, None);
        }
    }

    /// Segment bounds of any shape: owners or a typed error naming what is wrong.
    #[test]
    fn batch_bounds_are_checked(rows in 0..12usize, bounds in prop::collection::vec(any::<usize>(), 0..5), small in prop::collection::vec(0..14usize, 0..5)) {
        let t = table(rows);
        let group = ConsumerList::new(vec!["a".into(), "b".into()]);
        for b in [&bounds, &small] {
            let segments: Vec<Segment<'_>> = (0..b.len().saturating_sub(1))
                .map(|_| Segment { strategy: &Strategy::Avg, group: &group })
                .collect();
            let _ = owners_by_segment(&t, b, &segments);
            let one_more: Vec<Segment<'_>> = (0..b.len()).map(|_| Segment { strategy: &Strategy::AvgByCircle, group: &group }).collect();
            let _ = owners_by_segment(&t, b, &one_more);
        }
    }

    /// Any route (negative, zero and small counts, any permission) and any simulation settings:
    /// a result or a typed error; never an overflow of the time arithmetic.
    #[test]
    fn fault_simulation_takes_any_settings(
        counts in prop::collection::vec((any::<i64>().prop_map(|v| v % 9), any::<i64>()), 1..4),
        sends in 0..64usize,
        start_ms in any::<i64>(),
        interval_ms in any::<i64>(),
        retry_times in any::<u32>(),
        latency in any::<i64>(),
        jitter in any::<i64>(),
        rate in any::<f64>(),
        v5 in any::<bool>(),
        counter in any::<i32>(),
        now in any::<i64>(),
    ) {
        let route: Vec<QueueData> = counts.iter().enumerate().map(|(i, &(n, perm))| QueueData::new(&format!("b{i}"), perm, n)).collect();
        let Ok(tp) = TopicPublishInfo::from_route("t", &route, |_| true) else { return Ok(()) };
        let (semantics, latencies) = if v5 { (Semantics::V5, LatencyTable::v5()) } else { (Semantics::V4, LatencyTable::v4()) };
        let mut ft = MQFaultStrategy::new(semantics, latencies, true);
        let _ = ft.update_fault_item("b0", latency, latency % 2 == 0, true, now);
        let (mut c, mut w) = (counter, counter);
        if v5 {
            let _ = tp.select_5x(&ft, now, Some("b0"), Some(counter), &mut c);
        } else {
            let _ = tp.select_4x(&mut ft, now, Some("b1"), &mut c, &mut w);
        }
        let brokers = tp.queues().broker_dict().len();
        let models = vec![BrokerModel { latency_ms: latency, jitter_ms: jitter, failure_rate: rate }; brokers];
        let cfg = SimConfig { sends, start_ms, interval_ms, retry_times, send_which_queue: counter, which_item_worst: counter, ..SimConfig::default() };
        let _ = simulate(&tp, &mut ft, &models, &cfg);
    }

    /// Kafka assignors over any member topics, owned partitions and generations (indices out of
    /// range included): an assignment, never a panic.
    #[test]
    fn kafka_assignors_take_any_members(
        partitions in prop::collection::vec(0..6u32, 0..4),
        members in prop::collection::vec((prop::collection::vec(any::<u32>().prop_map(|t| t % 6), 0..4), prop::collection::vec((any::<u32>().prop_map(|t| t % 6), any::<u32>().prop_map(|p| p % 9)), 0..6), any::<Option<i32>>()), 0..5),
    ) {
        let cluster = Cluster::new(partitions.iter().enumerate().map(|(i, &n)| (format!("t{i}"), n)).collect());
        let members: Vec<Member> = members.iter().enumerate().map(|(i, (topics, owned, generation))| {
            let mut m = Member::new(&format!("m{i}"), topics);
            m.owned.clone_from(owned);
            m.generation = *generation;
            m
        }).collect();
        for name in ["range", "roundrobin", "sticky", "cooperative-sticky"] {
            let _ = Assignor::parse(name).unwrap().assign(&cluster, &members);
        }
    }

    /// Any bytes as sticky userData: decoded or a typed error; whatever decodes re-encodes, and
    /// decodes again to the same partitions in `encode`'s order.
    #[test]
    fn sticky_user_data_takes_any_bytes(data in prop::collection::vec(any::<u8>(), 0..64), small in prop::collection::vec(prop::sample::select(vec![0u8, 1, 2, 0x74, 0xff]), 0..40)) {
        for d in [&data, &small] {
            if let Ok(got) = user_data::decode(d) {
                let again = user_data::encode(got.partitions.iter().copied(), got.generation).unwrap();
                let back = user_data::decode(&again).unwrap();
                let mut expected = got.partitions.clone();
                expected.sort_unstable();
                prop_assert_eq!(back.partitions, expected);
                prop_assert_eq!(back.generation, got.generation);
            }
        }
    }
}

#[test]
fn a_simulation_too_large_to_hold_is_a_typed_error() {
    let tp = TopicPublishInfo::from_route("t", &[QueueData::new("a", 6, 2)], |_| true).unwrap();
    let mut ft = MQFaultStrategy::new(Semantics::V5, LatencyTable::v5(), true);
    let models = [BrokerModel {
        latency_ms: 0,
        jitter_ms: 0,
        failure_rate: 0.0,
    }];
    let cfg = SimConfig {
        sends: usize::MAX,
        interval_ms: 0,
        start_ms: 0,
        ..SimConfig::default()
    };
    let err = simulate(&tp, &mut ft, &models, &cfg).unwrap_err();
    assert!(
        matches!(err, FaultError::TooLarge { name: "sends", .. }),
        "{err:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// The snapshot JSON reader on arbitrary bytes and on a snapshot cut or with a byte changed
    /// anywhere: columns or `None`, never a panic; columns only for text that parses.
    #[test]
    fn the_json_reader_takes_any_text(
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        cut in 0..160usize,
        at in 0..160usize,
        byte in any::<u8>(),
    ) {
        use mqbalance_core::json_connections::read_connections;
        let _ = read_connections(&bytes);
        let good = br#"{"topics": {}, "groups": {"g": {"subscriptions": ["T"], "connections": [{"clientId": "a", "version": 3, "strategy": {"name": "AVG"}}, {"clientId": "b\u00e9"}]}}}"#;
        let _ = read_connections(&good[..cut.min(good.len())]);
        let mut changed = good.to_vec();
        let i = at % changed.len();
        changed[i] = byte;
        if let Some(read) = read_connections(&changed) {
            prop_assert_eq!(read.client_id.len() as i64, read.counts.iter().sum::<i64>());
            prop_assert_eq!(read.strategy.len(), read.client_id.len());
        }
    }
}
