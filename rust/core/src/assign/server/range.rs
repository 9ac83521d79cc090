//! The server-side `RangeAssignor`: members sorted (static members first by instance id, then
//! dynamic members by member id, Java string order); each topic split into contiguous ranges over
//! its subscribers in that order, the first `count % subscribers` getting one more.

use std::cmp::Ordering;

use super::{Owners, ServerAssignError, ServerGroup};
use crate::order::java_cmp;

fn missing() -> ServerAssignError {
    ServerAssignError::Assignor {
        message: "Member is subscribed to a non-existent topic".into(),
    }
}

/// `sortMemberIds`: a stable sort, as Java's `List.sort`.
fn sorted_members(g: &ServerGroup) -> Vec<usize> {
    let mut order: Vec<usize> = (0..g.members.len()).collect();
    order.sort_by(|&a, &b| {
        let (ma, mb) = (&g.members[a], &g.members[b]);
        match (&ma.instance_id, &mb.instance_id) {
            (Some(x), Some(y)) => java_cmp(x, y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => java_cmp(&ma.member_id, &mb.member_id),
        }
    });
    order
}

struct Split {
    count: u32,
    members: u32,
    min_quota: u32,
    extra: u32,
    next: u32,
}

impl Split {
    fn take(&mut self) -> (u32, u32) {
        let mut quota = self.min_quota;
        if self.extra > 0 {
            quota += 1;
            self.extra -= 1;
        }
        let start = self.next;
        let end = (start + quota).min(self.count);
        self.next = end;
        (start, end)
    }
}

pub(super) fn assign(
    g: &ServerGroup,
    homogeneous: bool,
    mut owners: Owners,
) -> Result<Owners, ServerAssignError> {
    let order = sorted_members(g);
    let nt = g.topics.len();
    let mut splits: Vec<Option<Split>> = (0..nt).map(|_| None).collect();
    let new_split = |t: usize, members: u32| -> Result<Split, ServerAssignError> {
        let count = g.topics[t].partitions.ok_or_else(missing)?;
        Ok(Split {
            count,
            members,
            min_quota: 0,
            extra: 0,
            next: 0,
        })
    };
    if homogeneous {
        for &t in &g.members[order[0]].subscribed {
            splits[t as usize] = Some(new_split(t as usize, g.members.len() as u32)?);
        }
    } else {
        for &mi in &order {
            for &t in &g.members[mi].subscribed {
                match &mut splits[t as usize] {
                    Some(s) => s.members += 1,
                    slot @ None => *slot = Some(new_split(t as usize, 1)?),
                }
            }
        }
    }
    for s in splits.iter_mut().flatten() {
        s.min_quota = s.count / s.members;
        s.extra = s.count % s.members;
    }
    for &mi in &order {
        let topics = if homogeneous {
            &g.members[order[0]].subscribed
        } else {
            &g.members[mi].subscribed
        };
        for &t in topics {
            if let Some(s) = &mut splits[t as usize] {
                let (start, end) = s.take();
                for p in start..end {
                    owners[t as usize][p as usize] = mi as i32;
                }
            }
        }
    }
    Ok(owners)
}
