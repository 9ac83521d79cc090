//! Kafka wire answers decoded from their bytes: the body of an `OffsetFetch` answer (versions
//! 8–9, one request for many groups: the watcher's largest answer, 2 MB for 100 groups × 1,000
//! partitions) into columns, and the CRC-32C (Castagnoli) of record batches.
//!
//! Pure: bytes in, columns out. The bytes are the answer's body, after the response header (the
//! connection code reads the frame and the header). Every length is checked against what is left,
//! so truncated or garbled bytes are a [`WireError`] naming the field and the byte offset, never a
//! panic or an allocation sized by the input.
//!
//! ```
//! use mqbalance_core::kafka_wire::{offset_fetch, crc32c};
//! // v8, flexible: throttle 0; one group "g" with topic "t", partition 0 committed at 5.
//! let mut body = vec![0, 0, 0, 0, 2, 2, b'g', 2, 2, b't', 2];
//! body.extend([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 255, 255, 255, 255, 1, 0, 0, 0]);
//! body.extend([0, 0, 0, 0, 0]); // topic tags, group error code and tags, top-level tags
//! let answer = offset_fetch(&body, 8).unwrap();
//! assert_eq!((answer.groups.as_slice(), answer.topics.as_slice()), (&["g".to_string()][..], &["t".to_string()][..]));
//! assert_eq!((answer.partition[0], answer.committed_offset[0]), (0, 5));
//! assert_eq!(crc32c(b"123456789"), 0xE306_9283);
//! ```

use rustc_hash::FxHashMap;
use thiserror::Error;

/// The `OffsetFetch` versions [`offset_fetch`] reads: the ones with many groups and topic names
/// (8 and 9 answer alike; 10 names topics by id).
pub const OFFSET_FETCH_VERSIONS: std::ops::RangeInclusive<i16> = 8..=9;

/// Bytes that are not the answer they were read as.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// A version this decoder does not read.
    #[error("{api} v{version} answers are not decoded here (versions {supported})")]
    UnsupportedVersion {
        /// The request's name.
        api: &'static str,
        /// The version asked for.
        version: i16,
        /// The versions read.
        supported: &'static str,
    },
    /// The bytes end inside a field.
    #[error("{api} answer truncated at byte {offset} reading {field}: needs {needed} bytes, {left} left")]
    Truncated {
        /// The request's name.
        api: &'static str,
        /// Where the field starts.
        offset: usize,
        /// The field's path, e.g. `groups[3].topics[0].partitions[17].committed_offset`.
        field: String,
        /// Bytes the field needs (at least).
        needed: usize,
        /// Bytes left.
        left: usize,
    },
    /// A field whose value cannot be (a varint longer than 5 bytes, a null where none is allowed,
    /// a length beyond the bytes left, a string that is not UTF-8).
    #[error("{api} answer malformed at byte {offset} in {field}: {problem}")]
    Malformed {
        /// The request's name.
        api: &'static str,
        /// Where the field starts.
        offset: usize,
        /// The field's path.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// Bytes left after the answer's last field.
    #[error("{api} answer has {left} bytes after its last field (at byte {offset})")]
    TrailingBytes {
        /// The request's name.
        api: &'static str,
        /// Where the extra bytes start.
        offset: usize,
        /// How many.
        left: usize,
    },
}

impl WireError {
    /// The byte offset the error is about (for the Python exception's value).
    pub fn offset(&self) -> Option<usize> {
        match self {
            WireError::UnsupportedVersion { .. } => None,
            WireError::Truncated { offset, .. }
            | WireError::Malformed { offset, .. }
            | WireError::TrailingBytes { offset, .. } => Some(*offset),
        }
    }
}

/// An `OffsetFetch` answer as columns: one row per partition, in the answer's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetFetchAnswer {
    /// The answer's `throttle_time_ms`.
    pub throttle_time_ms: i32,
    /// Group ids, in the answer's order.
    pub groups: Vec<String>,
    /// Each group's error code.
    pub group_errors: Vec<i16>,
    /// Topic names, each once, in the order first met.
    pub topics: Vec<String>,
    /// Per row: the index of its group in [`groups`](Self::groups).
    pub group: Vec<u32>,
    /// Per row: the index of its topic in [`topics`](Self::topics).
    pub topic: Vec<u32>,
    /// Per row: the partition index.
    pub partition: Vec<i32>,
    /// Per row: the committed offset (`-1`: none).
    pub committed_offset: Vec<i64>,
    /// Per row: the committed leader epoch.
    pub leader_epoch: Vec<i32>,
    /// Per row: the partition's error code.
    pub error_code: Vec<i16>,
}

/// A cursor over a flexible (compact) answer; every read checks what is left.
struct Reader<'a> {
    api: &'static str,
    data: &'a [u8],
    at: usize,
}

/// Where a field is, built only when an error is reported.
type Path<'p> = &'p dyn Fn() -> String;

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.data.len() - self.at
    }

    fn take(&mut self, n: usize, field: Path<'_>) -> Result<&'a [u8], WireError> {
        if self.left() < n {
            return Err(WireError::Truncated {
                api: self.api,
                offset: self.at,
                field: field(),
                needed: n,
                left: self.left(),
            });
        }
        let out = &self.data[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, field: Path<'_>) -> Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, field)?);
        Ok(out)
    }

    fn i16(&mut self, field: Path<'_>) -> Result<i16, WireError> {
        self.array(field).map(i16::from_be_bytes)
    }

    fn i32(&mut self, field: Path<'_>) -> Result<i32, WireError> {
        self.array(field).map(i32::from_be_bytes)
    }

    fn i64(&mut self, field: Path<'_>) -> Result<i64, WireError> {
        self.array(field).map(i64::from_be_bytes)
    }

    fn malformed(&self, offset: usize, field: Path<'_>, problem: String) -> WireError {
        WireError::Malformed {
            api: self.api,
            offset,
            field: field(),
            problem,
        }
    }

    /// An unsigned varint of at most 5 bytes (Kafka's `readUnsignedVarint`).
    fn uvarint(&mut self, field: Path<'_>) -> Result<u32, WireError> {
        let start = self.at;
        let mut out: u32 = 0;
        for i in 0..5 {
            let [b] = self.array::<1>(field)?;
            out |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if i == 4 && b > 0x0f {
                    return Err(self.malformed(start, field, "varint beyond 32 bits".into()));
                }
                return Ok(out);
            }
        }
        Err(self.malformed(start, field, "varint longer than 5 bytes".into()))
    }

    /// A compact array's element count; `min_size` is the fewest bytes one element takes, so a
    /// count the bytes left cannot hold is refused before anything is allocated.
    fn count(&mut self, field: Path<'_>, min_size: usize) -> Result<usize, WireError> {
        let start = self.at;
        let n = self.uvarint(field)?;
        if n == 0 {
            return Err(self.malformed(start, field, "null array where none is allowed".into()));
        }
        let n = (n - 1) as usize;
        if n.saturating_mul(min_size) > self.left() {
            return Err(self.malformed(
                start,
                field,
                format!(
                    "{n} elements of at least {min_size} bytes, {} bytes left",
                    self.left()
                ),
            ));
        }
        Ok(n)
    }

    /// A compact string's bytes (`None`: null), checked to be UTF-8.
    fn string(&mut self, field: Path<'_>, nullable: bool) -> Result<Option<&'a [u8]>, WireError> {
        let start = self.at;
        let n = self.uvarint(field)?;
        if n == 0 {
            if nullable {
                return Ok(None);
            }
            return Err(self.malformed(start, field, "null string where none is allowed".into()));
        }
        let bytes = self.take((n - 1) as usize, field)?;
        if let Err(e) = std::str::from_utf8(bytes) {
            return Err(self.malformed(start, field, format!("not UTF-8 ({e})")));
        }
        Ok(Some(bytes))
    }

    /// Tagged fields: skipped (none of them is read).
    fn tags(&mut self, field: Path<'_>) -> Result<(), WireError> {
        let n = self.uvarint(field)?;
        for _ in 0..n {
            self.uvarint(field)?;
            let size = self.uvarint(field)? as usize;
            self.take(size, field)?;
        }
        Ok(())
    }
}

fn utf8(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned() // checked by `Reader::string`: never lossy
}

/// The body of an `OffsetFetch` answer of `version` (see [`OFFSET_FETCH_VERSIONS`]) as columns.
pub fn offset_fetch(data: &[u8], version: i16) -> Result<OffsetFetchAnswer, WireError> {
    const API: &str = "OffsetFetch";
    if !OFFSET_FETCH_VERSIONS.contains(&version) {
        return Err(WireError::UnsupportedVersion {
            api: API,
            version,
            supported: "8-9",
        });
    }
    let mut r = Reader {
        api: API,
        data,
        at: 0,
    };
    let mut out = OffsetFetchAnswer {
        throttle_time_ms: r.i32(&|| "throttle_time_ms".into())?,
        ..OffsetFetchAnswer::default()
    };
    let mut topic_index: FxHashMap<&[u8], u32> = FxHashMap::default();
    // a group takes at least 4 bytes (id, topics, error code is 2, tags); a topic 3; a partition 20
    let groups = r.count(&|| "groups".into(), 5)?;
    for g in 0..groups {
        let id = r.string(&|| format!("groups[{g}].group_id"), false)?;
        out.groups.push(utf8(id.unwrap_or_default()));
        let gi = g as u32;
        let topics = r.count(&|| format!("groups[{g}].topics"), 3)?;
        for t in 0..topics {
            let name = r
                .string(&|| format!("groups[{g}].topics[{t}].name"), false)?
                .unwrap_or_default();
            let next = topic_index.len() as u32;
            let ti = *topic_index.entry(name).or_insert_with(|| {
                out.topics.push(utf8(name));
                next
            });
            let parts = r.count(&|| format!("groups[{g}].topics[{t}].partitions"), 20)?;
            for p in 0..parts {
                let at = |f: &'static str| {
                    move || format!("groups[{g}].topics[{t}].partitions[{p}].{f}")
                };
                out.partition.push(r.i32(&at("partition_index"))?);
                out.committed_offset.push(r.i64(&at("committed_offset"))?);
                out.leader_epoch.push(r.i32(&at("committed_leader_epoch"))?);
                r.string(&at("metadata"), true)?;
                out.error_code.push(r.i16(&at("error_code"))?);
                r.tags(&at("_tagged_fields"))?;
                out.group.push(gi);
                out.topic.push(ti);
            }
            r.tags(&|| format!("groups[{g}].topics[{t}]._tagged_fields"))?;
        }
        out.group_errors
            .push(r.i16(&|| format!("groups[{g}].error_code"))?);
        r.tags(&|| format!("groups[{g}]._tagged_fields"))?;
    }
    r.tags(&|| "_tagged_fields".into())?;
    if r.left() > 0 {
        return Err(WireError::TrailingBytes {
            api: API,
            offset: r.at,
            left: r.left(),
        });
    }
    Ok(out)
}

/// The CRC-32C (Castagnoli) of `data`, as a record batch (message format v2) carries it.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> Vec<u8> {
        let mut b = vec![0, 0, 0, 7, 3]; // throttle 7, 2 groups
        b.extend([2, b'a', 2, 2, b't', 3]); // group "a", 1 topic "t", 2 partitions
        for (p, off) in [(0u8, 5u8), (1, 9)] {
            b.extend([0, 0, 0, p, 0, 0, 0, 0, 0, 0, 0, off, 0, 0, 0, 2, 1, 0, 0, 0]);
        }
        b.extend([0, 0, 0, 0]); // topic tags, group error, group tags
        b.extend([2, b'b', 1, 0, 16, 0]); // group "b": no topics, error 16
        b.push(0);
        b
    }

    #[test]
    fn columns() {
        let a = offset_fetch(&body(), 8).unwrap();
        assert_eq!(a.throttle_time_ms, 7);
        assert_eq!(a.groups, ["a", "b"]);
        assert_eq!(a.group_errors, [0, 16]);
        assert_eq!(a.topics, ["t"]);
        assert_eq!(a.partition, [0, 1]);
        assert_eq!(a.committed_offset, [5, 9]);
        assert_eq!(a.leader_epoch, [2, 2]);
        assert_eq!(a.group, [0, 0]);
        assert_eq!(a.topic, [0, 0]);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let b = body();
        for n in 0..b.len() {
            let e = offset_fetch(&b[..n], 9).unwrap_err();
            assert!(
                matches!(e, WireError::Truncated { .. } | WireError::Malformed { .. }),
                "{n}: {e}"
            );
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(matches!(
            offset_fetch(&longer, 8),
            Err(WireError::TrailingBytes { left: 1, .. })
        ));
        assert!(matches!(
            offset_fetch(&b, 10),
            Err(WireError::UnsupportedVersion { .. })
        ));
    }

    #[test]
    fn names_the_field() {
        let b = body();
        let e = offset_fetch(&b[..20], 8).unwrap_err().to_string();
        assert!(
            e.contains("groups[0].topics[0].partitions: 2 elements"),
            "{e}"
        );
        let e = offset_fetch(&b[..51], 8).unwrap_err().to_string();
        assert!(
            e.contains("truncated at byte 51 reading groups[0].topics[0]._tagged_fields"),
            "{e}"
        );
        let mut huge = b[..4].to_vec();
        huge.extend([0xff, 0xff, 0xff, 0xff, 0x0f]);
        let e = offset_fetch(&huge, 8).unwrap_err().to_string();
        assert!(e.contains("groups") && e.contains("bytes left"), "{e}");
        let mut bad = b.clone();
        bad[6] = 0xff; // group "a" -> not UTF-8
        assert!(offset_fetch(&bad, 8)
            .unwrap_err()
            .to_string()
            .contains("not UTF-8"));
    }

    #[test]
    fn crc32c_check_value() {
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }
}
