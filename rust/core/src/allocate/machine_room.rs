//! `MACHINE_ROOM` (`AllocateMessageQueueByMachineRoom`): only queues of brokers named
//! `<idc>@<name>` (exactly two parts under Java's `split("@")`) whose idc is configured are
//! allocated: blocks of `len / c`, then a round-robin tail.
//!
//! ```
//! use mqbalance_core::allocate::machine_room::java_split_at;
//! assert_eq!(java_split_at("hz@broker-a"), vec!["hz", "broker-a"]);
//! assert_eq!(java_split_at("a@b@"), vec!["a", "b"]); // trailing empty strings are dropped
//! assert_eq!(java_split_at("@"), Vec::<&str>::new());
//! assert_eq!(java_split_at(""), vec![""]);
//! ```

use std::collections::BTreeSet;

use crate::error::AllocateError;
use crate::queues::{ConsumerList, QueueView};

/// Java `String.split("@")`: split on every `@`, then drop trailing empty strings (a string with
/// no `@` is returned whole, even when empty).
pub fn java_split_at(s: &str) -> Vec<&str> {
    if !s.contains('@') {
        return vec![s];
    }
    let mut parts: Vec<&str> = s.split('@').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts
}

/// The idc of a broker name when it has exactly two parts.
fn idc_of(broker: &str) -> Option<&str> {
    match java_split_at(broker).as_slice() {
        [idc, _] => Some(idc),
        _ => None,
    }
}

/// Whole-group owners. With the idc set unset, any two-part broker name is Java's
/// `NullPointerException` ([`AllocateError::ConsumerIdcsNotSet`]).
pub fn owners(
    consumer_idcs: Option<&BTreeSet<String>>,
    queues: &QueueView<'_>,
    group: &ConsumerList,
) -> Result<Vec<i64>, AllocateError> {
    // Decide once per distinct broker name.
    let dict = queues.table().broker_dict();
    let mut in_room = vec![false; dict.len()];
    for (code, name) in dict.iter().enumerate() {
        if let Some(idc) = idc_of(name) {
            in_room[code] = match consumer_idcs {
                Some(set) => set.contains(idc),
                None => false,
            };
        }
    }
    let table = queues.table();
    let premq: Vec<usize> = (0..queues.len())
        .filter(|&k| in_room[table.broker_code(queues.row(k)) as usize])
        .collect();
    if consumer_idcs.is_none() {
        if let Some(k) = (0..queues.len()).find(|&k| idc_of(queues.broker(k)).is_some()) {
            return Err(AllocateError::ConsumerIdcsNotSet {
                broker: queues.broker(k).to_owned(),
            });
        }
    }
    let c = group.len();
    let (m, r) = (premq.len() / c, premq.len() % c);
    let mut out = vec![-1i64; queues.len()];
    for i in (0..c).filter(|&i| group.is_first(i)) {
        for &k in &premq[i * m..i * m + m] {
            out[k] = i as i64;
        }
        if r > i {
            out[premq[i + m * c]] = i as i64;
        }
    }
    Ok(out)
}
