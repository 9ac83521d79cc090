//! The shared input check (`AbstractAllocateMessageQueueStrategy.check`), in Java's order.
//!
//! ```
//! use mqbalance_core::{allocate::check::check, AllocateError, ConsumerList};
//! let g = ConsumerList::new(vec!["a".into(), "b".into(), "a".into()]);
//! assert_eq!(check(Some(""), 3, &g), Err(AllocateError::EmptyCurrentId));
//! assert_eq!(check(Some("a"), 0, &g), Err(AllocateError::EmptyQueues));
//! assert_eq!(check(Some("zz"), 3, &g), Ok(None)); // not a member: empty result, no error
//! assert_eq!(check(Some("b"), 3, &g), Ok(Some(1)));
//! ```

use crate::error::AllocateError;
use crate::queues::ConsumerList;

/// Empty `mqAll` / `cidAll` checks (rules 2 and 3).
pub fn check_lists(n_queues: usize, n_consumers: usize) -> Result<(), AllocateError> {
    if n_queues == 0 {
        return Err(AllocateError::EmptyQueues);
    }
    if n_consumers == 0 {
        return Err(AllocateError::EmptyConsumers);
    }
    Ok(())
}

/// The whole check: `Ok(Some(i))` with `i = cidAll.indexOf(currentCID)` for a member, `Ok(None)`
/// for a non-member (Java returns an empty list), or Java's `IllegalArgumentException`.
/// Whitespace-only ids are not empty (`StringUtils.isEmpty`).
pub fn check(
    current_id: Option<&str>,
    n_queues: usize,
    group: &ConsumerList,
) -> Result<Option<usize>, AllocateError> {
    let id = match current_id {
        None | Some("") => return Err(AllocateError::EmptyCurrentId),
        Some(id) => id,
    };
    check_lists(n_queues, group.len())?;
    Ok(group.index_of(id))
}
