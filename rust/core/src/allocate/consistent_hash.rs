//! `CONSISTENT_HASH` (`AllocateMessageQueueConsistentHash`): the ring is built once per group
//! (Java rebuilds it in every client's call) and every queue is routed in parallel.
//!
//! ```
//! use mqbalance_core::{allocate::consistent_hash::owners, Charset, ConsumerList, QueueTable};
//! let q = QueueTable::from_rows((0..4).map(|i| ("T", "b", i)));
//! let g = ConsumerList::new(vec!["a".into()]);
//! assert_eq!(owners(10, Charset::Utf8, &q.all(), &g).unwrap(), vec![0; 4]);
//! assert_eq!(owners(0, Charset::Utf8, &q.all(), &g).unwrap(), vec![-1; 4]); // empty ring
//! ```

use crate::error::AllocateError;
use crate::queues::{ConsumerList, QueueView};
use crate::ring::{Charset, ConsistentHashRing};

/// Whole-group owners on the ring of `group`.
pub fn owners(
    virtual_node_cnt: u32,
    charset: Charset,
    queues: &QueueView<'_>,
    group: &ConsumerList,
) -> Result<Vec<i64>, AllocateError> {
    let ring = ConsistentHashRing::build(group, virtual_node_cnt, charset)?;
    Ok(ring.owners(queues, charset))
}
