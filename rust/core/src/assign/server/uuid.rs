//! Kafka's `Uuid` (topic ids): its string form, `compareTo` and `hashCode`.
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

/// Each byte's place in [`ALPHABET`], `NONE` for a byte outside it.
const DECODE: [u8; 256] = {
    let mut table = [NONE; 256];
    let mut i = 0;
    while i < ALPHABET.len() {
        table[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    table
};
const NONE: u8 = 0xFF;

fn sextet(c: u8) -> Option<u32> {
    let v = DECODE[c as usize];
    (v != NONE).then_some(u32::from(v))
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
}
