//! The userData of Kafka's Java `StickyAssignor` (`StickyAssignorUserData` v0 / v1), so Java and
//! Python members of one group can read each other's previous assignments.
//!
//! The schema's fields are written bare (no version prefix), big-endian:
//!
//! - v1 (what Java writes): `int32 n`, then `n × (int16 len, UTF-8 topic, int32 m, m × int32
//!   partition)`, then `int32 generation` (`-1` = none);
//! - v0: the same without the generation.
//!
//! Decoding tries v1, then v0, like Java's `StickyAssignor.deserializeTopicPartitionAssignment`,
//! and fails on anything else (Java then treats the member as owning nothing). Malformed or
//! truncated bytes give an error, never a panic, and nothing is allocated beyond what the bytes
//! can hold.
//!
//! ```
//! use mqbalance_core::assign::user_data::{decode, encode, Version};
//! let data = encode([("t1", 3), ("t0", 1), ("t0", 0)], Some(9)).unwrap();
//! // topics in name order, partitions ascending
//! assert_eq!(data[..6], [0, 0, 0, 2, 0, 2]);
//! let back = decode(&data).unwrap();
//! assert_eq!(back.partitions, vec![("t0", 0), ("t0", 1), ("t1", 3)]);
//! assert_eq!((back.generation, back.version), (Some(9), Version::V1));
//! // v0: no generation
//! let v0 = decode(&data[..data.len() - 4]).unwrap();
//! assert_eq!((v0.generation, v0.version), (None, Version::V0));
//! assert!(decode(b"\x00\x00\x00\x05junk").is_err());
//! ```

use rustc_hash::FxHashMap;
use thiserror::Error;

/// Longest topic name the layout can carry, in UTF-8 bytes (Kafka's `int16` string length).
pub const MAX_TOPIC_BYTES: usize = i16::MAX as usize;

/// Why bytes are not `StickyAssignorUserData`, or partitions cannot be written as it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UserDataError {
    /// No bytes at all (Java: no previous assignment).
    #[error("the userData is empty")]
    Empty,
    /// The bytes end inside a field.
    #[error("the userData ends at byte {len}: {need} more bytes needed at offset {at}")]
    Truncated {
        /// Offset of the field.
        at: usize,
        /// Bytes the field needs.
        need: usize,
        /// Length of the data.
        len: usize,
    },
    /// A negative array or string length.
    #[error("negative {what} {value} at offset {at}")]
    NegativeLength {
        /// `"topic count"`, `"topic name length"` or `"partition count"`.
        what: &'static str,
        /// The value read.
        value: i32,
        /// Its offset.
        at: usize,
    },
    /// A topic name that is not UTF-8.
    #[error("the topic name at offset {at} is not valid UTF-8")]
    InvalidUtf8 {
        /// Offset of the name's bytes.
        at: usize,
    },
    /// Bytes left over after the last field.
    #[error("{extra} trailing bytes after the userData's last field (offset {at})")]
    TrailingBytes {
        /// Where the layout ended.
        at: usize,
        /// How many bytes follow.
        extra: usize,
    },
    /// A topic name longer than [`MAX_TOPIC_BYTES`] (encoding).
    #[error("partitions[{index}].topic is {bytes} UTF-8 bytes; Kafka's string limit is 32767")]
    TopicTooLong {
        /// Position of the partition in the input.
        index: usize,
        /// The topic name.
        topic: String,
        /// Its length in UTF-8 bytes.
        bytes: usize,
    },
    /// More topics, or partitions of one topic, than an `int32` count holds (encoding).
    #[error("{count} {what} do not fit the userData's int32 count")]
    TooMany {
        /// `"topics"` or `"partitions of one topic"`.
        what: &'static str,
        /// How many there are.
        count: usize,
    },
}

/// Which layout the bytes had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// No generation.
    V0,
    /// With the generation (what Java writes).
    V1,
}

/// Decoded userData: the previous `(topic, partition)`s in the order written, and their generation
/// (`None` for v0 and for v1's `-1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StickyUserData<'a> {
    /// Previous partitions, topic names borrowed from the bytes.
    pub partitions: Vec<(&'a str, i32)>,
    /// Generation of the previous assignment.
    pub generation: Option<i32>,
    /// The layout that matched.
    pub version: Version,
}

/// v1 bytes (what Java writes) for `partitions`: grouped by topic, topics in name order (byte
/// order of UTF-8, which is code-point order), each topic's partitions ascending (repeats kept);
/// `None` is written as generation `-1`.
pub fn encode<'a>(
    partitions: impl IntoIterator<Item = (&'a str, i32)>,
    generation: Option<i32>,
) -> Result<Vec<u8>, UserDataError> {
    // Topics in first-seen order, then sorted by name; a run of one topic is one lookup.
    let mut by_topic: Vec<(&str, Vec<i32>)> = Vec::new();
    let mut index: FxHashMap<&str, usize> = FxHashMap::default();
    let mut size = 8usize;
    for (i, (topic, partition)) in partitions.into_iter().enumerate() {
        let k = match by_topic.last() {
            Some((last, _)) if *last == topic => by_topic.len() - 1,
            _ => {
                if topic.len() > MAX_TOPIC_BYTES {
                    return Err(UserDataError::TopicTooLong {
                        index: i,
                        topic: topic.to_owned(),
                        bytes: topic.len(),
                    });
                }
                *index.entry(topic).or_insert_with(|| {
                    by_topic.push((topic, Vec::new()));
                    size = size.saturating_add(6 + topic.len());
                    by_topic.len() - 1
                })
            }
        };
        by_topic[k].1.push(partition);
        size = size.saturating_add(4);
    }
    by_topic.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let count =
        |what, n: usize| i32::try_from(n).map_err(|_| UserDataError::TooMany { what, count: n });
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&count("topics", by_topic.len())?.to_be_bytes());
    for (topic, mut ids) in by_topic {
        ids.sort_unstable();
        // `topic.len() <= MAX_TOPIC_BYTES` was checked above.
        out.extend_from_slice(&(topic.len() as i16).to_be_bytes());
        out.extend_from_slice(topic.as_bytes());
        out.extend_from_slice(&count("partitions of one topic", ids.len())?.to_be_bytes());
        for p in ids {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    out.extend_from_slice(&generation.unwrap_or(-1).to_be_bytes());
    Ok(out)
}

/// v1, else v0 (Java's order). On failure the error is v1's (the layout Java writes).
pub fn decode(data: &[u8]) -> Result<StickyUserData<'_>, UserDataError> {
    if data.is_empty() {
        return Err(UserDataError::Empty);
    }
    decode_version(data, Version::V1).or_else(|e| decode_version(data, Version::V0).map_err(|_| e))
}

/// The previous assignment a member's userData claims, by Java's rule: bytes that are neither v1
/// nor v0 (or no bytes) claim nothing, as `StickyAssignor.memberData` treats a userData it cannot
/// deserialize as no previous assignment. The assignors' inputs and the decoder exposed to Python
/// both read userData through this.
///
/// ```
/// use mqbalance_core::assign::user_data::{encode, previous_assignment};
/// let data = encode([("t", 0)], Some(2)).unwrap();
/// assert_eq!(previous_assignment(&data).map(|d| d.generation), Some(Some(2)));
/// assert!(previous_assignment(b"\x00\x01junk").is_none()); // kafka-python's own layout: no claim
/// assert!(previous_assignment(b"").is_none());
/// ```
pub fn previous_assignment(data: &[u8]) -> Option<StickyUserData<'_>> {
    decode(data).ok()
}

/// The bytes read as exactly one layout.
pub fn decode_version(data: &[u8], version: Version) -> Result<StickyUserData<'_>, UserDataError> {
    let mut r = Reader { data, pos: 0 };
    let topics = r.length("topic count")?;
    let mut partitions = Vec::new();
    for _ in 0..topics {
        let len = r.length16()?;
        let at = r.pos;
        let topic =
            std::str::from_utf8(r.take(len)?).map_err(|_| UserDataError::InvalidUtf8 { at })?;
        let count = r.length("partition count")?;
        let ids = r.take(count.checked_mul(4).ok_or(UserDataError::Truncated {
            at: r.pos,
            need: usize::MAX,
            len: data.len(),
        })?)?;
        partitions.extend(
            ids.chunks_exact(4)
                .map(|b| (topic, i32::from_be_bytes([b[0], b[1], b[2], b[3]]))),
        );
    }
    let generation = match version {
        Version::V1 => Some(r.int()?).filter(|&g| g != -1),
        Version::V0 => None,
    };
    if r.pos != data.len() {
        return Err(UserDataError::TrailingBytes {
            at: r.pos,
            extra: data.len() - r.pos,
        });
    }
    Ok(StickyUserData {
        partitions,
        generation,
        version,
    })
}

/// A cursor over the bytes; every read is bounds-checked.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], UserDataError> {
        let out = self
            .pos
            .checked_add(n)
            .and_then(|end| self.data.get(self.pos..end))
            .ok_or(UserDataError::Truncated {
                at: self.pos,
                need: n,
                len: self.data.len(),
            })?;
        self.pos += n;
        Ok(out)
    }

    fn int(&mut self) -> Result<i32, UserDataError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An `int32` array length.
    fn length(&mut self, what: &'static str) -> Result<usize, UserDataError> {
        let at = self.pos;
        let value = self.int()?;
        usize::try_from(value).map_err(|_| UserDataError::NegativeLength { what, value, at })
    }

    /// An `int16` string length.
    fn length16(&mut self) -> Result<usize, UserDataError> {
        let at = self.pos;
        let b = self.take(2)?;
        let value = i16::from_be_bytes([b[0], b[1]]);
        usize::try_from(value).map_err(|_| UserDataError::NegativeLength {
            what: "topic name length",
            value: value.into(),
            at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes written field by field, independently of [`encode`].
    fn v1(topics: &[(&str, &[i32])], generation: i32) -> Vec<u8> {
        let mut out = v0(topics);
        out.extend_from_slice(&generation.to_be_bytes());
        out
    }

    fn v0(topics: &[(&str, &[i32])]) -> Vec<u8> {
        let mut out = (topics.len() as i32).to_be_bytes().to_vec();
        for (t, ps) in topics {
            out.extend_from_slice(&(t.len() as i16).to_be_bytes());
            out.extend_from_slice(t.as_bytes());
            out.extend_from_slice(&(ps.len() as i32).to_be_bytes());
            for p in *ps {
                out.extend_from_slice(&p.to_be_bytes());
            }
        }
        out
    }

    #[test]
    fn encode_groups_sorts_and_writes_v1() {
        let got = encode([("b", 2), ("a", 7), ("b", 0), ("b", 2)], Some(5)).unwrap();
        assert_eq!(got, v1(&[("a", &[7]), ("b", &[0, 2, 2])], 5));
        assert_eq!(encode([], None).unwrap(), v1(&[], -1));
        // code-point order: "Z" < "a" < "é"
        let got = encode([("é", 0), ("a", 0), ("Z", 0)], Some(1)).unwrap();
        assert_eq!(got, v1(&[("Z", &[0]), ("a", &[0]), ("é", &[0])], 1));
    }

    #[test]
    fn decode_reads_v1_then_v0() {
        let d = v1(&[("t", &[3, 1]), ("u", &[])], 4);
        let got = decode(&d).unwrap();
        assert_eq!(got.partitions, vec![("t", 3), ("t", 1)]);
        assert_eq!((got.generation, got.version), (Some(4), Version::V1));
        assert_eq!(decode(&v1(&[("t", &[0])], -1)).unwrap().generation, None);
        let d = v0(&[("t", &[2])]);
        let got = decode(&d).unwrap();
        assert_eq!(got.partitions, vec![("t", 2)]);
        assert_eq!((got.generation, got.version), (None, Version::V0));
    }

    #[test]
    fn round_trip() {
        let pairs = [("x", 9), ("x", -3), ("yy", i32::MAX), ("", i32::MIN)];
        let d = encode(pairs, Some(i32::MIN)).unwrap();
        let back = decode(&d).unwrap();
        assert_eq!(
            back.partitions,
            vec![("", i32::MIN), ("x", -3), ("x", 9), ("yy", i32::MAX)]
        );
        assert_eq!(back.generation, Some(i32::MIN));
    }

    #[test]
    fn malformed_bytes_are_errors() {
        assert_eq!(decode(b""), Err(UserDataError::Empty));
        assert!(matches!(
            decode(b"\x00\x00\x00\x05junk"),
            Err(UserDataError::Truncated { .. })
        ));
        assert!(matches!(
            decode(b"\xff\xff\xff\xff"),
            Err(UserDataError::NegativeLength {
                what: "topic count",
                value: -1,
                at: 0
            })
        ));
        let mut d = v0(&[("t", &[])]);
        d[4] = 0xff; // string length -n
        assert!(matches!(
            decode_version(&d, Version::V0),
            Err(UserDataError::NegativeLength {
                what: "topic name length",
                at: 4,
                ..
            })
        ));
        let d = v0(&[("\u{fffd}", &[])])
            .iter()
            .map(|&b| if b == 0xef { 0xff } else { b })
            .collect::<Vec<_>>();
        assert_eq!(
            decode_version(&d, Version::V0),
            Err(UserDataError::InvalidUtf8 { at: 6 })
        );
        let mut d = v0(&[("t", &[1])]);
        d[7..11].copy_from_slice(&(-2i32).to_be_bytes());
        assert!(matches!(
            decode(&d),
            Err(UserDataError::NegativeLength {
                what: "partition count",
                value: -2,
                ..
            })
        ));
        // a partition count whose bytes would not fit memory: no allocation, an error
        let mut d = v0(&[("t", &[1])]);
        d[7..11].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(decode(&d), Err(UserDataError::Truncated { .. })));
        let mut d = v1(&[("t", &[1])], 3);
        d.push(0);
        assert_eq!(
            decode_version(&d, Version::V1),
            Err(UserDataError::TrailingBytes { at: 19, extra: 1 })
        );
        // 5 bytes too many for v1, too few to be anything else
        assert!(decode(&d).is_err());
    }

    #[test]
    fn every_truncation_fails_and_never_panics() {
        let full = v1(&[("topic", &[0, 1, 2]), ("é", &[7])], 2);
        for cut in 0..full.len() {
            let part = &full[..cut];
            let got = decode(part);
            // The v0 reading of the bytes without their generation is the one valid prefix.
            if cut == full.len() - 4 {
                assert_eq!(got.unwrap().version, Version::V0);
            } else {
                assert!(got.is_err(), "cut at {cut}: {got:?}");
            }
        }
    }

    #[test]
    fn every_byte_flip_decodes_or_fails_without_panic() {
        let full = v1(&[("topic", &[0, 1, 2]), ("é", &[7])], 2);
        for i in 0..full.len() {
            for bit in 0..8 {
                let mut d = full.clone();
                d[i] ^= 1 << bit;
                if let Ok(got) = decode(&d) {
                    // What decodes re-encodes to bytes of the same length (v1) or 4 more (v0).
                    let extra = if got.version == Version::V0 { 4 } else { 0 };
                    assert!(got.partitions.len() <= 4);
                    let again = encode(got.partitions.iter().copied(), got.generation).unwrap();
                    assert!(again.len() <= d.len() + extra, "{i}/{bit}");
                }
            }
        }
    }

    #[test]
    fn encode_refuses_a_topic_longer_than_kafkas_strings() {
        let long = "x".repeat(MAX_TOPIC_BYTES + 1);
        let ok = "y".repeat(MAX_TOPIC_BYTES);
        assert_eq!(
            encode([(ok.as_str(), 0), (long.as_str(), 1)], None),
            Err(UserDataError::TopicTooLong {
                index: 1,
                topic: long.clone(),
                bytes: MAX_TOPIC_BYTES + 1
            })
        );
        let d = encode([(ok.as_str(), 0)], None).unwrap();
        assert_eq!(decode(&d).unwrap().partitions, vec![(ok.as_str(), 0)]);
        assert_eq!(
            UserDataError::TopicTooLong {
                index: 1,
                topic: long,
                bytes: 32768
            }
            .to_string(),
            "partitions[1].topic is 32768 UTF-8 bytes; Kafka's string limit is 32767"
        );
    }
}
