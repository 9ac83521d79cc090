//! The inputs of an allocation: a columnar queue table (strings interned) and a consumer list.
//!
//! A fleet has few distinct topics and brokers but millions of queues, so a [`QueueTable`] keeps
//! one dictionary per string column and a `u32` code per row. A [`QueueView`] is a list of rows of
//! a table in the order a strategy should see them (`mqAll`), without copying strings.
//!
//! ```
//! use mqbalance_core::QueueTable;
//! let t = QueueTable::from_rows([("T", "broker-b", 1), ("T", "broker-a", 7)]);
//! assert_eq!(t.key(1), "MessageQueue [topic=T, brokerName=broker-a, queueId=7]");
//! assert_eq!(t.java_sort_order(), vec![1, 0]); // broker-a before broker-b
//! ```

use rayon::prelude::*;
use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};

use crate::error::AllocateError;
use crate::order::java_ranks;

/// Queues as interned columns: `topic`, `brokerName`, `queueId` (a Java `int`).
#[derive(Debug, Clone, Default)]
pub struct QueueTable {
    topics: Vec<String>,
    brokers: Vec<String>,
    topic_code: Vec<u32>,
    broker_code: Vec<u32>,
    queue_id: Vec<i32>,
}

fn intern<'a>(dict: &mut Vec<String>, index: &mut HashMap<&'a str, u32>, s: &'a str) -> u32 {
    *index.entry(s).or_insert_with(|| {
        dict.push(s.to_owned());
        (dict.len() - 1) as u32
    })
}

fn check_codes(what: &'static str, codes: &[u32], dict_len: usize) -> Result<(), AllocateError> {
    match codes.iter().position(|&c| c as usize >= dict_len) {
        Some(row) => Err(AllocateError::InvalidCode {
            what,
            row,
            code: codes[row],
            dict_len,
        }),
        None => Ok(()),
    }
}

/// Append the decimal form of `v` (Java's `Integer.toString`).
fn push_int(buf: &mut String, v: i32) {
    let mut digits = [0u8; 11];
    let mut at = digits.len();
    let mut m = v.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if v < 0 {
        buf.push('-');
    }
    // Only ASCII digits were written.
    buf.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
}

impl QueueTable {
    /// Build from `(topic, brokerName, queueId)` rows, interning the strings.
    pub fn from_rows<'a, I>(rows: I) -> Self
    where
        I: IntoIterator<Item = (&'a str, &'a str, i32)>,
    {
        let mut t = QueueTable::default();
        let (mut ti, mut bi) = (HashMap::default(), HashMap::default());
        for (topic, broker, qid) in rows {
            t.topic_code.push(intern(&mut t.topics, &mut ti, topic));
            t.broker_code.push(intern(&mut t.brokers, &mut bi, broker));
            t.queue_id.push(qid);
        }
        t
    }

    /// Build from dictionary-encoded columns (what Arrow dictionaries and factorised numpy give).
    /// Codes must index their dictionary; the three row columns must have equal length.
    pub fn from_columns(
        topics: Vec<String>,
        topic_code: Vec<u32>,
        brokers: Vec<String>,
        broker_code: Vec<u32>,
        queue_id: Vec<i32>,
    ) -> Result<Self, AllocateError> {
        let n = queue_id.len();
        for (what, got) in [("topics", topic_code.len()), ("brokers", broker_code.len())] {
            if got != n {
                return Err(AllocateError::LengthMismatch {
                    what,
                    got,
                    expected: n,
                });
            }
        }
        check_codes("topics", &topic_code, topics.len())?;
        check_codes("brokers", &broker_code, brokers.len())?;
        Ok(QueueTable {
            topics,
            brokers,
            topic_code,
            broker_code,
            queue_id,
        })
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.queue_id.len()
    }

    /// True when the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.queue_id.is_empty()
    }

    /// Topic of row `i`.
    pub fn topic(&self, i: usize) -> &str {
        &self.topics[self.topic_code[i] as usize]
    }

    /// Broker name of row `i`.
    pub fn broker(&self, i: usize) -> &str {
        &self.brokers[self.broker_code[i] as usize]
    }

    /// Queue id of row `i`.
    pub fn queue_id(&self, i: usize) -> i32 {
        self.queue_id[i]
    }

    /// Broker-name dictionary code of row `i`, and the dictionary.
    pub fn broker_code(&self, i: usize) -> u32 {
        self.broker_code[i]
    }

    /// The broker-name dictionary.
    pub fn broker_dict(&self) -> &[String] {
        &self.brokers
    }

    /// The topic dictionary.
    pub fn topic_dict(&self) -> &[String] {
        &self.topics
    }

    /// Topic dictionary code of row `i`.
    pub fn topic_code(&self, i: usize) -> u32 {
        self.topic_code[i]
    }

    /// Java `MessageQueue.toString()` of row `i` — the consistent-hash key of the queue.
    pub fn key(&self, i: usize) -> String {
        let mut s = String::new();
        self.write_key(i, &mut s);
        s
    }

    /// Write the `toString()` of row `i` into `buf` (cleared first).
    pub fn write_key(&self, i: usize, buf: &mut String) {
        buf.clear();
        // Pieces pushed one by one: the formatting machinery costs more than the MD5 over it.
        buf.push_str("MessageQueue [topic=");
        buf.push_str(self.topic(i));
        buf.push_str(", brokerName=");
        buf.push_str(self.broker(i));
        buf.push_str(", queueId=");
        push_int(buf, self.queue_id(i));
        buf.push(']');
    }

    /// Every row, in table order.
    pub fn all(&self) -> QueueView<'_> {
        QueueView {
            table: self,
            rows: None,
        }
    }

    /// Some rows, in the given order.
    pub fn view<'a>(&'a self, rows: &'a [u32]) -> QueueView<'a> {
        QueueView {
            table: self,
            rows: Some(rows),
        }
    }

    /// Stable permutation in Java `MessageQueue` order: topic, then broker name (Java string
    /// order), then queue id. Queue ids compare as plain integers; Java subtracts them as 32-bit
    /// ints, which only differs for ids more than 2^31 apart (never seen in practice).
    pub fn java_sort_order(&self) -> Vec<u32> {
        let trank = java_ranks(&self.topics);
        let brank = java_ranks(&self.brokers);
        let mut keys: Vec<(u64, i32, u32)> = (0..self.len())
            .into_par_iter()
            .map(|i| {
                let hi = (u64::from(trank[self.topic_code[i] as usize]) << 32)
                    | u64::from(brank[self.broker_code[i] as usize]);
                (hi, self.queue_id[i], i as u32)
            })
            .collect();
        // Unique keys (the row index breaks ties), so an unstable sort is a stable one here.
        keys.par_sort_unstable();
        keys.into_iter().map(|k| k.2).collect()
    }
}

/// Rows of a [`QueueTable`] in the order a strategy sees them (Java's `mqAll`).
#[derive(Debug, Clone, Copy)]
pub struct QueueView<'a> {
    table: &'a QueueTable,
    rows: Option<&'a [u32]>,
}

impl<'a> QueueView<'a> {
    /// Number of queues in the view.
    pub fn len(&self) -> usize {
        self.rows.map_or(self.table.len(), <[u32]>::len)
    }

    /// True when the view has no queues.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Table row of view position `k`.
    #[inline]
    pub fn row(&self, k: usize) -> usize {
        self.rows.map_or(k, |r| r[k] as usize)
    }

    /// The underlying table.
    pub fn table(&self) -> &'a QueueTable {
        self.table
    }

    /// Broker name at view position `k`.
    pub fn broker(&self, k: usize) -> &'a str {
        self.table.broker(self.row(k))
    }
}

/// The client ids of a group exactly as passed (Java's `cidAll`): order and duplicates kept.
///
/// Each slot also knows the first slot holding the same id, because Java's `indexOf` makes every
/// duplicate behave as its first occurrence.
#[derive(Debug, Clone)]
pub struct ConsumerList {
    ids: Vec<String>,
    first: Vec<u32>,
}

/// Nonzero when `v` is not a Java `int` (`v + 2^31` does not fit in 32 bits): or-ed over a
/// column in branch-free adds, shifts and ors that vectorise.
#[inline]
pub fn java_int_excess(v: i64) -> u64 {
    (v as u64).wrapping_add(1 << 31) >> 32
}

/// True when every value is a Java `int`.
///
/// ```
/// use mqbalance_core::queues::all_java_ints;
/// assert!(all_java_ints(&[0, i64::from(i32::MIN), i64::from(i32::MAX)]));
/// assert!(!all_java_ints(&[0, 1 << 31]));
/// ```
pub fn all_java_ints(values: &[i64]) -> bool {
    values.iter().fold(0u64, |acc, &v| acc | java_int_excess(v)) == 0
}

/// For every slot of `ids`, the first slot holding the same id (what [`ConsumerList`] keeps);
/// the ids may be borrowed (`&str`), so a caller that only needs the slots copies no string.
///
/// ```
/// use mqbalance_core::queues::first_slots;
/// assert_eq!(first_slots(&["a", "b", "a"]), vec![0, 1, 0]);
/// ```
pub fn first_slots<S: AsRef<str>>(ids: &[S]) -> Vec<u32> {
    // A sorted list (what every rebalance passes) keeps equal ids adjacent: one comparison
    // per id finds the first slots, no hashing.
    if ids.windows(2).all(|w| w[0].as_ref() <= w[1].as_ref()) {
        let mut first = Vec::with_capacity(ids.len());
        for j in 0..ids.len() {
            let f = if j > 0 && ids[j].as_ref() == ids[j - 1].as_ref() {
                first[j - 1]
            } else {
                j as u32
            };
            first.push(f);
        }
        return first;
    }
    let mut seen: HashMap<&str, u32> = HashMap::with_capacity_and_hasher(ids.len(), FxBuildHasher);
    ids.iter()
        .enumerate()
        .map(|(j, id)| *seen.entry(id.as_ref()).or_insert(j as u32))
        .collect()
}

/// How many distinct ids each range `a..b` of `ids` holds (a group's connections, each range one
/// group): fewer than `b - a` means some processes share an id. `None` when a range does not fit
/// `ids` (`a > b` or `b > ids.len()`).
///
/// ```
/// use mqbalance_core::queues::distinct_per_range;
/// let ids = ["a", "b", "a", "c"];
/// assert_eq!(distinct_per_range(&ids, &[(0, 3), (3, 4), (1, 1)]), Some(vec![2, 1, 0]));
/// assert_eq!(distinct_per_range(&ids, &[(2, 5)]), None);
/// ```
pub fn distinct_per_range<S: AsRef<str> + Sync>(
    ids: &[S],
    ranges: &[(usize, usize)],
) -> Option<Vec<u32>> {
    if ranges.iter().any(|&(a, b)| a > b || b > ids.len()) {
        return None;
    }
    let count = |&(a, b): &(usize, usize)| -> u32 {
        let part = &ids[a..b];
        first_slots(part)
            .iter()
            .enumerate()
            .filter(|&(j, &f)| f as usize == j)
            .count() as u32
    };
    Some(if ids.len() >= PARALLEL_IDS {
        ranges.par_iter().map(count).collect()
    } else {
        ranges.iter().map(count).collect()
    })
}

/// Ids below which [`distinct_per_range`] stays on one thread.
const PARALLEL_IDS: usize = 1 << 16;

impl ConsumerList {
    /// Wrap a list of client ids.
    pub fn new(ids: Vec<String>) -> Self {
        let first = first_slots(&ids);
        ConsumerList { ids, first }
    }

    /// Number of slots (duplicates counted).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when there are no ids.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The ids, as passed.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    /// First slot holding the same id as slot `j`.
    #[inline]
    pub fn first_of(&self, j: usize) -> usize {
        self.first[j] as usize
    }

    /// The first slot of every slot ([`first_slots`]).
    pub fn first_slots(&self) -> &[u32] {
        &self.first
    }

    /// True when slot `j` is the first occurrence of its id.
    #[inline]
    pub fn is_first(&self, j: usize) -> bool {
        self.first[j] as usize == j
    }

    /// Java `cidAll.indexOf(id)`.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.ids.iter().position(|x| x == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_java_to_string() {
        let t = QueueTable::from_rows([("T", "b", 0), ("T", "b", -7), ("T", "b", i32::MIN)]);
        let mut buf = String::new();
        let keys: Vec<String> = (0..3)
            .map(|i| {
                t.write_key(i, &mut buf);
                buf.clone()
            })
            .collect();
        assert_eq!(
            keys,
            [
                "MessageQueue [topic=T, brokerName=b, queueId=0]",
                "MessageQueue [topic=T, brokerName=b, queueId=-7]",
                "MessageQueue [topic=T, brokerName=b, queueId=-2147483648]",
            ]
        );
    }

    #[test]
    fn sort_is_stable_and_java_ordered() {
        let t = QueueTable::from_rows([
            ("T", "b", 2),
            ("T", "a", 9),
            ("S", "z", 0),
            ("T", "b", 2),
            ("T", "b", -1),
        ]);
        assert_eq!(t.java_sort_order(), vec![2, 1, 4, 0, 3]);
    }

    #[test]
    fn bad_codes_are_errors() {
        let e = QueueTable::from_columns(
            vec!["T".into()],
            vec![1],
            vec!["b".into()],
            vec![0],
            vec![0],
        )
        .unwrap_err();
        assert!(matches!(
            e,
            AllocateError::InvalidCode {
                what: "topics",
                row: 0,
                code: 1,
                dict_len: 1
            }
        ));
    }

    #[test]
    fn duplicates_point_at_first_slot() {
        let c = ConsumerList::new(vec!["a".into(), "b".into(), "a".into()]);
        assert_eq!(
            (c.first_of(2), c.is_first(2), c.index_of("b")),
            (0, false, Some(1))
        );
    }
}
