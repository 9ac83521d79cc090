//! RocketMQ's consistent-hash ring (`ConsistentHashRouter` with its default MD5 hash).
//!
//! A node's hash is the first four MD5 digest bytes of its key read as a big-endian unsigned
//! integer. Each client id contributes virtual nodes `<clientId>-<replica>`; a queue belongs to the
//! first virtual node at or after the hash of `MessageQueue.toString()`, wrapping around.
//!
//! ```
//! use mqbalance_core::{Charset, ConsistentHashRing, ConsumerList, QueueTable};
//! let group = ConsumerList::new(vec!["10.0.0.7@DEFAULT".into(), "10.0.0.8@DEFAULT".into()]);
//! let ring = ConsistentHashRing::build(&group, 10, Charset::Utf8).unwrap();
//! assert_eq!(ring.len(), 20);
//! let queues = QueueTable::from_rows((0..8).map(|q| ("TopicTest", "broker-a", q)));
//! let owners = ring.owners(&queues.all(), Charset::Utf8);
//! assert!(owners.iter().all(|&o| o == 0 || o == 1));
//! ```

use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};
use std::fmt::Write as _;

use md5::{Digest, Md5};
use rayon::prelude::*;

use crate::error::AllocateError;
use crate::queues::{ConsumerList, QueueView};

/// The most virtual nodes one ring may hold (consumers × `virtualNodeCnt`, duplicates counted).
/// Java would need gigabytes for rings past this size; we refuse with [`AllocateError::RingTooLarge`].
pub const MAX_RING_ENTRIES: usize = 1 << 24;

/// Rings of at most this many virtual nodes are built by sorting when no two hashes collide
/// (expected collisions at this size: n²/2³³ ≈ 0.12).
const SORTED_RING_MAX: usize = 1 << 15;

/// How strings become bytes before hashing. RocketMQ 5.x always uses UTF-8; 4.x used the JVM's
/// default charset, where characters the charset cannot map become `?` (one per code point).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Charset {
    /// UTF-8 (RocketMQ 5.x, and 4.x on a UTF-8 JVM).
    #[default]
    Utf8,
    /// ISO-8859-1 / Latin-1: U+0000..U+00FF map to one byte, anything else to `?`.
    Iso8859_1,
    /// US-ASCII (`ANSI_X3.4-1968`, the POSIX locale of older JVMs): U+0000..U+007F, else `?`.
    UsAscii,
}

impl Charset {
    /// Parse a Java charset name (case-insensitive, common aliases accepted).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().replace('_', "-").as_str() {
            "utf-8" | "utf8" => Some(Charset::Utf8),
            "iso-8859-1" | "iso8859-1" | "latin-1" | "latin1" => Some(Charset::Iso8859_1),
            "us-ascii" | "ascii" | "ansi-x3.4-1968" => Some(Charset::UsAscii),
            _ => None,
        }
    }

    /// Append `String.getBytes(charset)` of `s` to `out`.
    pub fn encode_into(self, s: &str, out: &mut Vec<u8>) {
        let limit = match self {
            Charset::Utf8 => {
                out.extend_from_slice(s.as_bytes());
                return;
            }
            Charset::Iso8859_1 => 0xFF,
            Charset::UsAscii => 0x7F,
        };
        out.extend(s.chars().map(|c| {
            if (c as u32) <= limit {
                c as u32 as u8
            } else {
                b'?'
            }
        }));
    }
}

/// RocketMQ's default `HashFunction`: MD5, first four bytes big-endian, unsigned.
#[inline]
pub fn md5_hash(bytes: &[u8]) -> u32 {
    let d = Md5::digest(bytes);
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// Hash a string as RocketMQ does under the given charset.
pub fn hash_str(s: &str, charset: Charset) -> u32 {
    if charset == Charset::Utf8 {
        md5_hash(s.as_bytes())
    } else {
        let mut b = Vec::with_capacity(s.len());
        charset.encode_into(s, &mut b);
        md5_hash(&b)
    }
}

/// A built ring: sorted hashes and, for each, the owning consumer slot (first occurrence of the id).
#[derive(Debug, Clone)]
pub struct ConsistentHashRing {
    keys: Vec<u32>,
    owners: Vec<u32>,
}

fn vnode_hash(id_bytes: &[u8], replica: u64, buf: &mut Vec<u8>) -> u32 {
    buf.clear();
    buf.extend_from_slice(id_bytes);
    buf.push(b'-');
    buf.extend_from_slice(itoa_u64(replica).as_bytes());
    md5_hash(buf)
}

struct Digits {
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn itoa_u64(mut v: u64) -> Digits {
    let mut d = Digits {
        buf: [0; 20],
        start: 20,
    };
    loop {
        d.start -= 1;
        d.buf[d.start] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return d;
        }
    }
}

impl ConsistentHashRing {
    /// Build the ring the way `ConsistentHashRouter` does, once for the whole group: for each slot
    /// in order, with `r` = ring entries the same id already owns, insert replicas `r..r+V`; a
    /// hash collision replaces the earlier node (and so lowers its owner's count).
    ///
    /// The MD5 work runs on all cores, assuming no collision; the sequential insertion checks that
    /// assumption slot by slot and rehashes a slot whose replica numbers were shifted by a collision.
    pub fn build(
        group: &ConsumerList,
        virtual_node_cnt: u32,
        charset: Charset,
    ) -> Result<Self, AllocateError> {
        let c = group.len();
        let v = virtual_node_cnt as usize;
        if c.saturating_mul(v) > MAX_RING_ENTRIES {
            return Err(AllocateError::RingTooLarge {
                consumers: c,
                virtual_node_cnt,
                limit: MAX_RING_ENTRIES,
            });
        }
        let encoded: Vec<Vec<u8>> = group
            .ids()
            .par_iter()
            .map(|id| {
                let mut b = Vec::with_capacity(id.len());
                charset.encode_into(id, &mut b);
                b
            })
            .collect();
        // Speculative replica start of each slot: V per earlier slot with the same id.
        let mut seen = vec![0u64; c];
        let spec: Vec<u64> = (0..c)
            .map(|j| {
                let f = group.first_of(j);
                let r = seen[f];
                seen[f] += v as u64;
                r
            })
            .collect();
        let hashes: Vec<u32> = (0..c * v)
            .into_par_iter()
            .map_init(Vec::new, |buf, k| {
                let j = k / v.max(1);
                vnode_hash(&encoded[j], spec[j] + (k % v.max(1)) as u64, buf)
            })
            .collect();

        // Without a hash collision every slot's replicas start where speculated and no node
        // replaces another: the ring is the speculative nodes, sorted. A collision (two equal
        // hashes side by side once sorted) takes the sequential insertion below instead. Rings
        // large enough that a 32-bit collision is likely (from ~65k nodes on) go there directly.
        if hashes.len() <= SORTED_RING_MAX {
            let mut entries: Vec<(u32, u32)> = hashes
                .iter()
                .enumerate()
                .map(|(k, &h)| (h, group.first_of(k / v.max(1)) as u32))
                .collect();
            entries.sort_unstable();
            if entries.windows(2).all(|w| w[0].0 != w[1].0) {
                let (keys, owners) = entries.into_iter().unzip();
                return Ok(ConsistentHashRing { keys, owners });
            }
        }

        let mut ring: HashMap<u32, u32> = HashMap::with_capacity_and_hasher(c * v, FxBuildHasher);
        let mut count = vec![0u64; c];
        let mut buf = Vec::new();
        for j in 0..c {
            let owner = group.first_of(j);
            let r = count[owner];
            for t in 0..v {
                let h = if r == spec[j] {
                    hashes[j * v + t]
                } else {
                    vnode_hash(&encoded[j], r + t as u64, &mut buf)
                };
                if let Some(prev) = ring.insert(h, owner as u32) {
                    count[prev as usize] -= 1;
                }
                count[owner] += 1;
            }
        }
        let mut entries: Vec<(u32, u32)> = ring.into_iter().collect();
        entries.par_sort_unstable();
        let (keys, owners) = entries.into_iter().unzip();
        Ok(ConsistentHashRing { keys, owners })
    }

    /// Number of virtual nodes on the ring.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True for an empty ring (`virtualNodeCnt` 0): nobody owns anything.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Position on the ring of a key hash: the first node at or after it, wrapping around to 0.
    /// The ring must not be empty.
    #[inline]
    pub fn position(&self, hash: u32) -> usize {
        let i = self.keys.partition_point(|&k| k < hash);
        if i == self.keys.len() {
            0
        } else {
            i
        }
    }

    /// Owner slot of the node at ring position `i`.
    #[inline]
    pub fn node_owner(&self, i: usize) -> u32 {
        self.owners[i]
    }

    /// Owner slot of a key hash: the first node at or after it, wrapping around.
    #[inline]
    pub fn route(&self, hash: u32) -> Option<u32> {
        if self.keys.is_empty() {
            return None;
        }
        Some(self.owners[self.position(hash)])
    }

    /// Owner slot of every queue of the view (`-1` when the ring is empty), hashing on all cores.
    pub fn owners(&self, queues: &QueueView<'_>, charset: Charset) -> Vec<i64> {
        if self.is_empty() {
            return vec![-1; queues.len()];
        }
        queue_hashes(queues, charset)
            .into_par_iter()
            .map(|h| self.route(h).map_or(-1, i64::from))
            .collect()
    }
}

/// The ring hash of every queue of the view (MD5 of `MessageQueue.toString()`), on all cores.
/// Queues of one topic and broker side by side share their keys' first block ([`Md5Keys`]).
pub fn queue_hashes(queues: &QueueView<'_>, charset: Charset) -> Vec<u32> {
    let table = queues.table();
    (0..queues.len())
        .into_par_iter()
        .map_init(
            || (String::new(), Vec::new(), Md5Keys::default()),
            |(s, b, keys), k| {
                table.write_key(queues.row(k), s);
                if charset == Charset::Utf8 {
                    keys.hash(s.as_bytes())
                } else {
                    b.clear();
                    charset.encode_into(s, b);
                    keys.hash(b)
                }
            },
        )
        .collect()
}

/// [`md5_hash`] of keys one after another, keeping the digest state after a key's first 64-byte
/// block: a key whose first 64 bytes are the previous key's costs one block less. Queue keys
/// `MessageQueue [topic=T, brokerName=B, queueId=N]` of one topic and broker share that block
/// when the two names have 21 characters or more in all.
///
/// ```
/// use mqbalance_core::ring::{md5_hash, Md5Keys};
/// let mut keys = Md5Keys::default();
/// let a = b"MessageQueue [topic=topic-0000001, brokerName=broker-1, queueId=7]";
/// let b = b"MessageQueue [topic=topic-0000001, brokerName=broker-1, queueId=8]";
/// assert_eq!((keys.hash(a), keys.hash(b), keys.hash(b"x")), (md5_hash(a), md5_hash(b), md5_hash(b"x")));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Md5Keys {
    head: Vec<u8>,
    after_head: Option<Md5>,
}

impl Md5Keys {
    /// The ring hash of `key` (see [`md5_hash`]).
    pub fn hash(&mut self, key: &[u8]) -> u32 {
        let Some((head, tail)) = key.split_at_checked(64) else {
            return md5_hash(key);
        };
        if self.head != head {
            self.head.clear();
            self.head.extend_from_slice(head);
            self.after_head = None;
        }
        // a whole block: compressed at once (MD5's buffer is eager), then only cloned
        let state = self
            .after_head
            .get_or_insert_with(|| Md5::new().chain_update(head));
        let d = state.clone().chain_update(tail).finalize();
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }
}

/// MD5 of every key on all cores and nothing else (keys side by side sharing their first block
/// as [`queue_hashes`] shares it): the floor under a whole group's ring and queue hashing (what
/// `benches/` compares [`ConsistentHashRing`] work with).
pub fn md5_all(keys: &[Vec<u8>]) -> Vec<u32> {
    keys.par_iter()
        .map_init(Md5Keys::default, |state, k| state.hash(k))
        .collect()
}

/// Format `<clientId>-<replica>` (the virtual node key), for tests and tooling.
pub fn virtual_node_key(client_id: &str, replica: u64) -> String {
    let mut s = String::with_capacity(client_id.len() + 4);
    let _ = write!(s, "{client_id}-{replica}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_prefix_is_big_endian() {
        // md5("") = d41d8cd98f00b204e9800998ecf8427e
        assert_eq!(md5_hash(b""), 0xd41d_8cd9);
    }

    #[test]
    fn keys_sharing_a_first_block_hash_as_alone() {
        // heads equal and not, keys of 0..200 bytes (one, two, four blocks), a head coming back
        let heads = [[b'a'; 64], [b'b'; 64]];
        let mut keys = Md5Keys::default();
        for round in 0..3usize {
            for len in [0usize, 1, 55, 56, 63, 64, 65, 119, 120, 128, 200] {
                for head in &heads[..=round % 2] {
                    let mut key: Vec<u8> = head.to_vec();
                    key.extend((0..len.saturating_sub(64)).map(|i| (i * 7 + len) as u8));
                    key.truncate(len);
                    assert_eq!(keys.hash(&key), md5_hash(&key), "len {len} round {round}");
                }
            }
        }
    }

    #[test]
    fn legacy_charsets_replace_per_code_point() {
        let mut b = Vec::new();
        Charset::Iso8859_1.encode_into("é😀中", &mut b);
        assert_eq!(b, vec![0xE9, b'?', b'?']);
        b.clear();
        Charset::UsAscii.encode_into("aé", &mut b);
        assert_eq!(b, b"a?");
    }

    #[test]
    fn vnode_keys_match_format() {
        let mut buf = Vec::new();
        assert_eq!(
            vnode_hash(b"id", 12, &mut buf),
            md5_hash(virtual_node_key("id", 12).as_bytes())
        );
        assert_eq!(vnode_hash(b"id", 0, &mut buf), md5_hash(b"id-0"));
    }

    #[test]
    fn duplicate_ids_double_the_weight() {
        let g = ConsumerList::new(vec!["a".into(), "b".into(), "a".into()]);
        let ring = ConsistentHashRing::build(&g, 5, Charset::Utf8).unwrap();
        let a = ring.owners.iter().filter(|&&o| o == 0).count();
        assert_eq!((a, ring.len()), (10, 15));
        assert!(ring.owners.iter().all(|&o| o != 2));
    }

    /// `ConsistentHashRouter.addNode` literally: each slot's replicas start at the ring entries its
    /// id already owns, a later equal hash replaces the earlier node.
    fn naive(group: &ConsumerList, v: u64) -> Vec<(u32, u32)> {
        let mut ring = std::collections::BTreeMap::new();
        for j in 0..group.len() {
            let owner = group.first_of(j) as u32;
            let r = ring.values().filter(|&&o| o == owner).count() as u64;
            for t in 0..v {
                let key = virtual_node_key(&group.ids()[j], r + t);
                ring.insert(md5_hash(key.as_bytes()), owner);
            }
        }
        ring.into_iter().collect()
    }

    #[test]
    fn colliding_virtual_nodes_are_inserted_in_order() {
        // Two ids whose replica-0 keys share a ring hash (a birthday search over "c<i>-0").
        let mut seen = HashMap::default();
        let (a, b) = (0u32..)
            .find_map(|i| {
                let h = md5_hash(format!("c{i}-0").as_bytes());
                seen.insert(h, i).map(|j| (j, i))
            })
            .unwrap();
        for ids in [
            vec![format!("c{a}"), format!("c{b}")],
            vec![
                format!("c{b}"),
                "x".into(),
                format!("c{a}"),
                format!("c{b}"),
            ],
        ] {
            let g = ConsumerList::new(ids);
            for v in [1u32, 3] {
                assert_eq!(ring_pairs(&g, v), naive(&g, u64::from(v)));
            }
        }
        let g = ConsumerList::new((0..50).map(|i| format!("id{}", i % 37)).collect());
        assert_eq!(ring_pairs(&g, 10), naive(&g, 10));
    }

    /// The built ring as (key, owner) pairs, in ring order.
    fn ring_pairs(g: &ConsumerList, v: u32) -> Vec<(u32, u32)> {
        let ring = ConsistentHashRing::build(g, v, Charset::Utf8).unwrap();
        ring.keys
            .iter()
            .copied()
            .zip(ring.owners.iter().copied())
            .collect()
    }

    #[test]
    fn too_large_ring_is_refused() {
        let g = ConsumerList::new(vec!["a".into(), "b".into()]);
        assert!(matches!(
            ConsistentHashRing::build(&g, u32::MAX, Charset::Utf8),
            Err(AllocateError::RingTooLarge { .. })
        ));
    }
}
