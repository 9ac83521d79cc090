//! `MACHINE_ROOM_NEARBY-<inner>` (`AllocateMachineRoomNearby`): queues are grouped by the machine
//! room of their broker, consumers by their own room (a resolver decides both). Each room's queues go
//! to that room's consumers through the inner strategy; rooms with no consumer at all are shared by
//! the whole group. A client's result lists its own room first, then the shared rooms in Java string
//! order of their names.
//!
//! Rooms arrive as a [`RoomMap`]: a room per queue-table row and per consumer slot, so any resolver
//! (a Python object, a prefix rule) can feed it.
//!
//! ```
//! use mqbalance_core::{allocate, ConsumerList, QueueTable, Strategy};
//! use mqbalance_core::allocate::RoomMap;
//! let q = QueueTable::from_rows([("T", "hz@b1", 0), ("T", "hz@b1", 1), ("T", "sh@b2", 0), ("T", "gz@b3", 0)]);
//! let g = ConsumerList::new(vec!["hz@c1".into(), "sh@c2".into()]);
//! let rooms = RoomMap::from_prefix(&q, &g, "@");
//! let s = Strategy::nearby(Strategy::Avg).unwrap();
//! // hz queues to hz@c1, sh to sh@c2, gz has no consumer: shared by both through AVG.
//! assert_eq!(allocate::owners(&s, &q.all(), &g, Some(&rooms)).unwrap(), vec![0, 0, 1, 0]);
//! ```

use std::collections::BTreeMap;

use crate::error::AllocateError;
use crate::order::java_ranks;
use crate::queues::{ConsumerList, QueueTable, QueueView};

/// Machine rooms: a dictionary of names, the room of every queue-table row and of every consumer
/// slot. An empty name stands for Java's null/empty room and is an error when reached.
#[derive(Debug, Clone)]
pub struct RoomMap {
    names: Vec<String>,
    queue_room: Vec<u32>,
    consumer_room: Vec<u32>,
}

impl RoomMap {
    /// Rooms from dictionary codes, validated against the table and the group.
    pub fn new(
        names: Vec<String>,
        queue_room: Vec<u32>,
        consumer_room: Vec<u32>,
        table: &QueueTable,
        group: &ConsumerList,
    ) -> Result<Self, AllocateError> {
        for (what, got, expected, codes) in [
            ("queue rooms", queue_room.len(), table.len(), &queue_room),
            (
                "consumer rooms",
                consumer_room.len(),
                group.len(),
                &consumer_room,
            ),
        ] {
            if got != expected {
                return Err(AllocateError::LengthMismatch {
                    what,
                    got,
                    expected,
                });
            }
            if let Some(row) = codes.iter().position(|&c| c as usize >= names.len()) {
                return Err(AllocateError::InvalidCode {
                    what,
                    row,
                    code: codes[row],
                    dict_len: names.len(),
                });
            }
        }
        Ok(RoomMap {
            names,
            queue_room,
            consumer_room,
        })
    }

    /// The prefix rule: a room is the text before the first `sep` of the broker name / client id,
    /// or the whole text when there is none.
    pub fn from_prefix(table: &QueueTable, group: &ConsumerList, sep: &str) -> Self {
        let prefix = |s: &str| s.split_once(sep).map_or(s, |(p, _)| p).to_owned();
        let mut names: Vec<String> = Vec::new();
        let mut index = std::collections::HashMap::new();
        let mut code = |room: String| -> u32 {
            *index.entry(room.clone()).or_insert_with(|| {
                names.push(room);
                (names.len() - 1) as u32
            })
        };
        let broker_rooms: Vec<u32> = table
            .broker_dict()
            .iter()
            .map(|b| code(prefix(b)))
            .collect();
        let consumer_room = group.ids().iter().map(|id| code(prefix(id))).collect();
        let queue_room = (0..table.len())
            .map(|i| broker_rooms[table.broker_code(i) as usize])
            .collect();
        RoomMap {
            names,
            queue_room,
            consumer_room,
        }
    }

    /// Rooms with a permuted consumer list: slot `k` of the result is slot `order[k]` of this map.
    #[must_use]
    pub fn permute_consumers(&self, order: &[u32]) -> Self {
        RoomMap {
            names: self.names.clone(),
            queue_room: self.queue_room.clone(),
            consumer_room: order
                .iter()
                .map(|&j| self.consumer_room[j as usize])
                .collect(),
        }
    }
}

/// Queue positions and consumer slots per room, rooms in Java order (Java's two `TreeMap`s).
struct Grouped {
    queues: BTreeMap<u32, Vec<u32>>,
    consumers: BTreeMap<u32, Vec<u32>>,
}

fn group_by_room(
    queues: &QueueView<'_>,
    group: &ConsumerList,
    rooms: &RoomMap,
) -> Result<Grouped, AllocateError> {
    let rank = java_ranks(&rooms.names);
    let mut g = Grouped {
        queues: BTreeMap::new(),
        consumers: BTreeMap::new(),
    };
    for k in 0..queues.len() {
        let room = rooms.queue_room[queues.row(k)] as usize;
        if rooms.names[room].is_empty() {
            return Err(AllocateError::EmptyQueueRoom {
                queue: queues.table().key(queues.row(k)),
            });
        }
        g.queues.entry(rank[room]).or_default().push(k as u32);
    }
    for j in 0..group.len() {
        let room = rooms.consumer_room[j] as usize;
        if rooms.names[room].is_empty() {
            return Err(AllocateError::EmptyConsumerRoom {
                client_id: group.ids()[j].clone(),
            });
        }
        g.consumers.entry(rank[room]).or_default().push(j as u32);
    }
    Ok(g)
}

fn sub_group(group: &ConsumerList, slots: &[u32]) -> ConsumerList {
    ConsumerList::new(
        slots
            .iter()
            .map(|&j| group.ids()[j as usize].clone())
            .collect(),
    )
}

fn rows_of(queues: &QueueView<'_>, positions: &[u32]) -> Vec<u32> {
    positions
        .iter()
        .map(|&k| queues.row(k as usize) as u32)
        .collect()
}

/// Whole-group owners: every room's queues through `inner` (the inner strategy's owners of a
/// queue view over a consumer list), over that room's consumers or, for a room without consumers,
/// over the whole group.
pub fn owners(
    inner: impl Fn(&QueueView<'_>, &ConsumerList) -> Result<Vec<i64>, AllocateError>,
    queues: &QueueView<'_>,
    group: &ConsumerList,
    rooms: &RoomMap,
) -> Result<Vec<i64>, AllocateError> {
    let g = group_by_room(queues, group, rooms)?;
    let table = queues.table();
    let mut out = vec![-1i64; queues.len()];
    for (room, positions) in &g.queues {
        let rows = rows_of(queues, positions);
        let view = table.view(&rows);
        let local: Vec<i64> = match g.consumers.get(room) {
            Some(slots) => inner(&view, &sub_group(group, slots))?
                .into_iter()
                .map(|o| {
                    if o < 0 {
                        -1
                    } else {
                        group.first_of(slots[o as usize] as usize) as i64
                    }
                })
                .collect(),
            None => inner(&view, group)?,
        };
        for (&k, o) in positions.iter().zip(local) {
            out[k as usize] = o;
        }
    }
    Ok(out)
}

/// Java's per-client call for member slot `me` (the input check has passed); `inner` is the inner
/// strategy's per-client call (client id, queue view, consumer list → positions in the view).
pub fn allocate_member(
    inner: impl Fn(&str, &QueueView<'_>, &ConsumerList) -> Result<Vec<u32>, AllocateError>,
    me: usize,
    queues: &QueueView<'_>,
    group: &ConsumerList,
    rooms: &RoomMap,
) -> Result<Vec<u32>, AllocateError> {
    let g = group_by_room(queues, group, rooms)?;
    let table = queues.table();
    let id = group.ids()[me].as_str();
    let my_room = java_ranks(&rooms.names)[rooms.consumer_room[me] as usize];
    let mut result = Vec::new();
    let mut take = |positions: &Vec<u32>, consumers: &ConsumerList| -> Result<(), AllocateError> {
        let rows = rows_of(queues, positions);
        let picked = inner(id, &table.view(&rows), consumers)?;
        result.extend(picked.into_iter().map(|l| positions[l as usize]));
        Ok(())
    };
    if let Some(positions) = g.queues.get(&my_room) {
        let slots = &g.consumers[&my_room];
        take(positions, &sub_group(group, slots))?;
    }
    for (_, positions) in g
        .queues
        .iter()
        .filter(|(r, _)| **r != my_room && !g.consumers.contains_key(r))
    {
        take(positions, group)?;
    }
    Ok(result)
}

/// Put each member's positions in Java's return order: its own room first, then the shared rooms in
/// room order (positions ascend within a room already).
pub(crate) fn order_member_lists(lists: &mut [Vec<u32>], queues: &QueueView<'_>, rooms: &RoomMap) {
    let rank = java_ranks(&rooms.names);
    for (j, list) in lists.iter_mut().enumerate().filter(|(_, l)| !l.is_empty()) {
        let mine = rank[rooms.consumer_room[j] as usize];
        list.sort_by_key(|&k| {
            let r = rank[rooms.queue_room[queues.row(k as usize)] as usize];
            (if r == mine { 0 } else { 1 + u64::from(r) }, k)
        });
    }
}
