//! Kafka's `Uuid` (topic ids): its string form, `compareTo`, `hashCode`, and the iteration order
//! of a Java `HashSet<Uuid>` built from a collection.
//!
//! ```
//! use mqbalance_core::assign::server::Uuid;
//! let id = Uuid::parse("AAAAAAAAAAAAAAAAAAAAAQ").unwrap();
//! assert_eq!((id.msb, id.lsb), (0, 1));
//! assert_eq!(id.to_string(), "AAAAAAAAAAAAAAAAAAAAAQ");
//! // Signed comparison: an id with the top bit set sorts first.
//! let neg = Uuid { msb: i64::MIN, lsb: 0 };
//! assert!(neg < id);
//! ```

use std::fmt;

/// A Kafka topic id: 128 bits, compared as Java's `Uuid.compareTo` (signed most-significant 64
/// bits, then signed least-significant 64 bits), which is the derived order of the two `i64`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uuid {
    /// Most significant 64 bits, as Java's `long`.
    pub msb: i64,
    /// Least significant 64 bits, as Java's `long`.
    pub lsb: i64,
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn sextet(c: u8) -> Option<u32> {
    ALPHABET.iter().position(|&a| a == c).map(|p| p as u32)
}

impl Uuid {
    /// Parse `Uuid.toString()`'s form: 22 characters of unpadded base64url for the 16 bytes, in
    /// canonical form (the two unused low bits of the last character zero). `None` otherwise.
    pub fn parse(s: &str) -> Option<Uuid> {
        let b = s.as_bytes();
        if b.len() != 22 {
            return None;
        }
        // 22 * 6 = 132 bits: the 128 bits of data, then 4 padding bits that must be zero.
        let mut acc: u128 = 0;
        for &c in &b[..21] {
            acc = (acc << 6) | u128::from(sextet(c)?);
        }
        let last = sextet(b[21])?;
        if last & 0xF != 0 {
            return None;
        }
        let v = (acc << 2) | u128::from(last >> 4);
        Some(Uuid {
            msb: (v >> 64) as u64 as i64,
            lsb: v as u64 as i64,
        })
    }

    /// Java `Uuid.hashCode()`: the two 32-bit halves of `msb ^ lsb`, xored.
    pub fn java_hash_code(self) -> i32 {
        let x = self.msb ^ self.lsb;
        ((x >> 32) as i32) ^ (x as i32)
    }
}

impl fmt::Display for Uuid {
    /// `Uuid.toString()`: unpadded base64url of the big-endian bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = u128::from(self.msb as u64) << 64 | u128::from(self.lsb as u64);
        let mut out = [0u8; 22];
        for (k, o) in out.iter_mut().enumerate() {
            // Sextet k holds bits 127-6k down to 122-6k; the last one ends in 4 zero bits.
            let s = if k < 21 { v >> (122 - 6 * k) } else { v << 4 };
            *o = ALPHABET[(s & 63) as usize];
        }
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

/// Java's `HashMap` bins turn into trees (with another iteration order) when one bin of a table of
/// 64 or more slots would hold a ninth entry; we do not model tree bins and refuse such inputs.
/// Random topic ids practically never collide so; deliberately crafted ones can.
pub const TREEIFY_THRESHOLD: usize = 8;

const MIN_TREEIFY_CAPACITY: usize = 64;

fn table_size_for(cap: usize) -> usize {
    cap.max(1).next_power_of_two().min(1 << 30)
}

/// The iteration order of `new HashSet<>(c)` for a collection `c` iterating `ids` (distinct) in
/// the order given: indices into `ids`. `None` when Java would build a tree bin (see
/// [`TREEIFY_THRESHOLD`]).
///
/// `HashSet(Collection)` sizes its table to `tableSizeFor(max((int)(n / .75f) + 1, 16))`, then
/// adds in order; a bin reaching a ninth entry doubles a table under 64 slots. Iteration walks the
/// slots in order, and each slot's entries in insertion order.
///
/// ```
/// use mqbalance_core::assign::server::{java_hash_set_order, Uuid};
/// let ids = [Uuid { msb: 0, lsb: 17 }, Uuid { msb: 0, lsb: 2 }, Uuid { msb: 0, lsb: 1 }];
/// // hashCodes 17, 2, 1 -> slots 1, 2, 1 of 16: slot 1 holds 17 then 1 (insertion order).
/// assert_eq!(java_hash_set_order(&ids), Some(vec![0, 2, 1]));
/// ```
pub fn java_hash_set_order(ids: &[Uuid]) -> Option<Vec<usize>> {
    let n = ids.len();
    // Java's `(int) (c.size() / .75f) + 1`: an int divided as a float, as HashSet does.
    #[allow(clippy::cast_precision_loss)]
    let initial = (((n as f32) / 0.75f32) as i32 as usize + 1).max(16);
    let mut cap = table_size_for(initial);
    let spread: Vec<u32> = ids
        .iter()
        .map(|u| {
            let h = u.java_hash_code() as u32;
            h ^ (h >> 16)
        })
        .collect();
    let mut counts = vec![0usize; cap];
    for i in 0..n {
        let slot = spread[i] as usize & (cap - 1);
        counts[slot] += 1;
        if counts[slot] > TREEIFY_THRESHOLD {
            if cap >= MIN_TREEIFY_CAPACITY {
                return None;
            }
            cap *= 2;
            counts = vec![0usize; cap];
            for &s in &spread[..=i] {
                counts[s as usize & (cap - 1)] += 1;
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (spread[i] as usize & (cap - 1), i));
    Some(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects() {
        // Uuid.fromString("_____________________w") is (-1, -1); the top bits are the first char.
        let all = Uuid::parse("_____________________w").unwrap();
        assert_eq!((all.msb, all.lsb), (-1, -1));
        let top = Uuid {
            msb: i64::MIN,
            lsb: 0,
        };
        assert_eq!(top.to_string(), "gAAAAAAAAAAAAAAAAAAAAA");
        let u = Uuid {
            msb: -0x1234_5678_9abc_def0,
            lsb: 0x0fed_cba9_8765_4321,
        };
        assert_eq!(Uuid::parse(&u.to_string()), Some(u));
        assert_eq!(Uuid::parse("AAAAAAAAAAAAAAAAAAAAAB"), None); // non-zero padding bits
        assert_eq!(Uuid::parse("AAAAAAAAAAAAAAAAAAAAA"), None);
        assert_eq!(Uuid::parse("AAAAAAAAAAAAAAAAAAAA+Q"), None); // not base64url
    }

    #[test]
    fn ninth_entry_of_a_small_table_resizes() {
        // Nine ids in slot 1 of 16; the ninth doubles the table to 32: hash 17 moves to slot 17.
        let ids: Vec<Uuid> = [1, 17, 33, 49, 65, 81, 97, 113, 129]
            .iter()
            .map(|&h| Uuid { msb: 0, lsb: h })
            .collect();
        let order = java_hash_set_order(&ids).unwrap();
        let hashes: Vec<i64> = order.iter().map(|&i| ids[i].lsb).collect();
        assert_eq!(hashes, vec![1, 33, 65, 97, 129, 17, 49, 81, 113]);
    }

    #[test]
    fn tree_bins_are_refused() {
        // One slot throughout: the 9th entry doubles 16 to 32, the 10th 32 to 64, the 11th treeifies.
        let ids: Vec<Uuid> = (0..11)
            .map(|k| Uuid {
                msb: 0,
                lsb: k * 1024,
            })
            .collect();
        assert!(java_hash_set_order(&ids[..10]).is_some());
        assert_eq!(java_hash_set_order(&ids), None);
    }
}
