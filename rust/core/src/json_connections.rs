//! A RocketMQ snapshot's JSON text read in one pass with its connections straight into columns:
//! a million connections never become a million Python dicts.
//!
//! [`read_connections`] gives the connection fields as Arrow-layout columns (offsets, bytes and a
//! validity bitmap), the number of connections of each group in document order, each
//! connection's `"strategy"` as an index into the distinct raw JSON texts of the strategies, and a
//! *skeleton*: the document with every group's `"connections"` array written as `[]` (topics,
//! subscriptions, settings and everything else kept as written), small enough for any JSON parser.
//!
//! It answers only for a text it is sure of: well-formed UTF-8 JSON (RFC 8259: no `NaN`, no lone
//! surrogate escape, no number beyond `f64`), no object repeating a key and no escaped key
//! ([`crate::json_keys::scan_keys`]), `"groups"` an object of objects each with a `"connections"`
//! array of objects whose `clientId` is a string, `clientAddr` / `language` a string or null and
//! `version` an integer or null. Anything else gives `None`, and the caller's own parser (the
//! reference) reads the text and names the problem, so an answer here is never a different one.
//!
//! ```
//! use mqbalance_core::json_connections::read_connections;
//! let text = r#"{"topics": {}, "groups": {"g": {"subscriptions": ["T"],
//!     "connections": [{"clientId": "a", "version": 7}, {"clientId": "b", "strategy": "AVG"}]}}}"#;
//! let read = read_connections(text.as_bytes()).unwrap();
//! assert_eq!(read.counts, vec![2]);
//! assert_eq!(read.client_id.get(1), Some("b"));
//! assert_eq!(read.version.get(0), Some(7));
//! assert_eq!(read.strategy, vec![-1, 0]);
//! assert_eq!(read.strategy_texts, vec![r#""AVG""#.to_string()]);
//! assert_eq!(read.skeleton, r#"{"topics":{},"groups":{"g":{"subscriptions":["T"],"connections":[]}}}"#);
//! assert!(read_connections(br#"{"groups": {"g": {"connections": [{"clientId": 1}]}}}"#).is_none());
//! ```

use std::borrow::Cow;
use std::fmt;

use rustc_hash::FxHashMap;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::json_keys::{scan_keys, KeyScan};

/// A validity bitmap in Arrow's layout (bit `i` of byte `i / 8`, least significant first; set =
/// present) and its count of nulls.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Validity {
    /// The bits; all rows present when `nulls == 0`.
    pub bits: Vec<u8>,
    /// Number of unset bits.
    pub nulls: usize,
    len: usize,
}

impl Validity {
    fn push(&mut self, present: bool) {
        if self.len % 8 == 0 {
            self.bits.push(0);
        }
        if present {
            *self.bits.last_mut().expect("a byte was pushed") |= 1 << (self.len % 8);
        } else {
            self.nulls += 1;
        }
        self.len += 1;
    }

    /// Whether row `i` is present.
    pub fn is_valid(&self, i: usize) -> bool {
        self.bits.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1)
    }
}

/// A string column in Arrow's `utf8` layout: `offsets` (one more than rows, 32-bit), the bytes,
/// and which rows are present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrColumn {
    /// Row `i` is `data[offsets[i]..offsets[i + 1]]`.
    pub offsets: Vec<i32>,
    /// The rows' UTF-8 bytes, back to back.
    pub data: Vec<u8>,
    /// Which rows are present (a null row is empty).
    pub validity: Validity,
}

impl Default for StrColumn {
    fn default() -> Self {
        StrColumn {
            offsets: vec![0],
            data: Vec::new(),
            validity: Validity::default(),
        }
    }
}

impl StrColumn {
    /// Append a row; `false` when the bytes would overflow 32-bit offsets.
    fn push(&mut self, value: Option<&str>) -> bool {
        if let Some(s) = value {
            self.data.extend_from_slice(s.as_bytes());
        }
        let Ok(end) = i32::try_from(self.data.len()) else {
            return false;
        };
        self.offsets.push(end);
        self.validity.push(value.is_some());
        true
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// True when there is no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `i` (`None` when null or out of range).
    pub fn get(&self, i: usize) -> Option<&str> {
        if i >= self.len() || !self.validity.is_valid(i) {
            return None;
        }
        let (a, b) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        std::str::from_utf8(&self.data[a..b]).ok()
    }
}

/// A nullable 64-bit integer column: values (0 where null) and which rows are present.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IntColumn {
    /// The values.
    pub values: Vec<i64>,
    /// Which rows are present.
    pub validity: Validity,
}

impl IntColumn {
    /// Row `i` (`None` when null or out of range).
    pub fn get(&self, i: usize) -> Option<i64> {
        (i < self.values.len() && self.validity.is_valid(i)).then(|| self.values[i])
    }
}

/// What [`read_connections`] gives for a text it is sure of.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SnapshotConnections {
    /// The document, its groups' `"connections"` arrays written as `[]` (whitespace between
    /// tokens dropped where the reader rewrote, values as written).
    pub skeleton: String,
    /// Connections of each group of `"groups"`, in document order.
    pub counts: Vec<i64>,
    /// `clientId` of every connection (never null).
    pub client_id: StrColumn,
    /// `clientAddr` (null when absent or null).
    pub client_addr: StrColumn,
    /// `language` (null when absent or null).
    pub language: StrColumn,
    /// `version` (null when absent or null).
    pub version: IntColumn,
    /// Index into `strategy_texts` of each connection's own `"strategy"`, `-1` without one.
    pub strategy: Vec<i32>,
    /// The distinct raw JSON texts of the connections' `"strategy"` values, first seen first.
    pub strategy_texts: Vec<String>,
}

/// Read the connections of a snapshot's JSON `text` into columns; `None` when the text is not
/// one this reader is sure of (see the module documentation): the caller's parser decides then.
pub fn read_connections(text: &[u8]) -> Option<SnapshotConnections> {
    let text = std::str::from_utf8(text).ok()?;
    if scan_keys(text.as_bytes()) != KeyScan::Distinct {
        return None;
    }
    let mut reader = Reader {
        out: SnapshotConnections::default(),
        strategies: FxHashMap::default(),
        ok: true,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let top = Top {
        reader: &mut reader,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    if !reader.ok || !top {
        return None;
    }
    Some(reader.out)
}

struct Reader<'a> {
    out: SnapshotConnections,
    strategies: FxHashMap<&'a str, i32>,
    /// False once a value was out of this reader's reach (a column past 2 GiB).
    ok: bool,
}

impl<'a> Reader<'a> {
    fn push(&mut self, c: Connection<'a>) {
        let out = &mut self.out;
        self.ok &= out.client_id.push(Some(&c.client_id))
            && out.client_addr.push(c.client_addr.as_deref())
            && out.language.push(c.language.as_deref());
        out.version.values.push(c.version.unwrap_or(0));
        out.version.validity.push(c.version.is_some());
        let code = match c.strategy {
            None => -1,
            Some(raw) => {
                let next = self.strategies.len() as i32;
                *self.strategies.entry(raw.get()).or_insert_with(|| {
                    out.strategy_texts.push(raw.get().to_owned());
                    next
                })
            }
        };
        out.strategy.push(code);
    }
}

/// Write `"key":` (keys hold no escape: [`scan_keys`] refuses escaped keys).
fn write_key(out: &mut String, first: bool, key: &str) {
    if !first {
        out.push(',');
    }
    out.push('"');
    out.push_str(key);
    out.push_str("\":");
}

/// Copies an object into the skeleton as written, except the value of the key `special`: `read`
/// takes that one from the map (writing what stands for it). Gives whether `special` was there.
fn copy_object_except<'de: 'a, 'a, M: MapAccess<'de>>(
    reader: &mut Reader<'a>,
    map: &mut M,
    special: &str,
    mut read: impl FnMut(&mut Reader<'a>, &mut M) -> Result<(), M::Error>,
) -> Result<bool, M::Error> {
    let mut seen = false;
    reader.out.skeleton.push('{');
    let mut first = true;
    while let Some(key) = map.next_key::<&'de str>()? {
        write_key(&mut reader.out.skeleton, first, key);
        first = false;
        if key == special {
            read(reader, map)?;
            seen = true;
        } else {
            let raw: &'de RawValue = map.next_value()?;
            reader.out.skeleton.push_str(raw.get());
        }
    }
    reader.out.skeleton.push('}');
    Ok(seen)
}

/// The top-level object: `"groups"` read by [`Groups`], every other value copied as written.
/// Gives whether `"groups"` was there.
struct Top<'r, 'a> {
    reader: &'r mut Reader<'a>,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Top<'_, 'a> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<bool, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Top<'_, 'a> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a snapshot object")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<bool, M::Error> {
        copy_object_except(self.reader, &mut map, "groups", |reader, map| {
            map.next_value_seed(Groups { reader })
        })
    }
}

/// The `"groups"` object: each group by [`Group`].
struct Groups<'r, 'a> {
    reader: &'r mut Reader<'a>,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Groups<'_, 'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Groups<'_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of groups")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        self.reader.out.skeleton.push('{');
        let mut first = true;
        while let Some(key) = map.next_key::<&'de str>()? {
            write_key(&mut self.reader.out.skeleton, first, key);
            first = false;
            let count = self.reader.out.strategy.len();
            let had = map.next_value_seed(Group {
                reader: &mut *self.reader,
            })?;
            if !had {
                return Err(serde::de::Error::custom("a group without connections"));
            }
            let count = (self.reader.out.strategy.len() - count) as i64;
            self.reader.out.counts.push(count);
        }
        self.reader.out.skeleton.push('}');
        Ok(())
    }
}

/// One group object: `"connections"` read by [`Connections`] (and written `[]`), every other
/// value copied as written. Gives whether `"connections"` was there.
struct Group<'r, 'a> {
    reader: &'r mut Reader<'a>,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Group<'_, 'a> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<bool, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Group<'_, 'a> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a group object")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<bool, M::Error> {
        copy_object_except(self.reader, &mut map, "connections", |reader, map| {
            map.next_value_seed(Connections {
                reader: &mut *reader,
            })?;
            reader.out.skeleton.push_str("[]");
            Ok(())
        })
    }
}

/// A `"connections"` array: each element a [`Connection`], pushed into the columns.
struct Connections<'r, 'a> {
    reader: &'r mut Reader<'a>,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Connections<'_, 'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Connections<'_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of connections")
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        while let Some(c) = seq.next_element::<Connection<'de>>()? {
            self.reader.push(c);
        }
        Ok(())
    }
}

/// One connection object: the fields the snapshot keeps; any other value is checked as JSON and
/// skipped (refused when it holds a run of more digits than Python converts to an `int`, so that
/// the reference parser, which would refuse the text, decides).
struct Connection<'a> {
    client_id: Cow<'a, str>,
    client_addr: Option<Cow<'a, str>>,
    language: Option<Cow<'a, str>>,
    version: Option<i64>,
    /// Any JSON value (`null` included) as written, when the key is there.
    strategy: Option<&'a RawValue>,
}

/// Python's default `sys.get_int_max_str_digits()`: a longer integer is a `ValueError` there.
const PYTHON_INT_DIGITS: usize = 4300;

fn has_long_digit_run(text: &str) -> bool {
    text.len() > PYTHON_INT_DIGITS
        && text
            .as_bytes()
            .split(|b| !b.is_ascii_digit())
            .any(|run| run.len() > PYTHON_INT_DIGITS)
}

impl<'de: 'a, 'a> Deserialize<'de> for Connection<'a> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_map(ConnectionVisitor(std::marker::PhantomData))
    }
}

struct ConnectionVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ConnectionVisitor<'a> {
    type Value = Connection<'a>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a connection object")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Connection<'a>, M::Error> {
        let mut client_id = None;
        let mut c = Connection {
            client_id: Cow::Borrowed(""),
            client_addr: None,
            language: None,
            version: None,
            strategy: None,
        };
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "clientId" => client_id = Some(map.next_value::<Text<'de>>()?.0),
                "clientAddr" => c.client_addr = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0),
                "language" => c.language = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0),
                "version" => c.version = map.next_value()?,
                "strategy" => c.strategy = Some(map.next_value()?),
                _ => {
                    let raw: &'de RawValue = map.next_value()?;
                    if has_long_digit_run(raw.get()) {
                        return Err(serde::de::Error::custom("an integer Python would refuse"));
                    }
                }
            }
        }
        c.client_id = client_id.ok_or_else(|| serde::de::Error::missing_field("clientId"))?;
        Ok(c)
    }
}

/// A JSON string, borrowed from the text when it holds no escape.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}

struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
    type Value = Text<'a>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Text<'a>, E> {
        Ok(Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text<'a>, E> {
        Ok(Text(Cow::Owned(v.to_owned())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Option<SnapshotConnections> {
        read_connections(text.as_bytes())
    }

    #[test]
    fn columns_and_skeleton() {
        let text = r#" {"topics": {"T": {"queueDatas": [{"brokerName": "b", "readQueueNums": 4}]}},
            "groups": {"g1": {"subscriptions": ["T"], "strategy": {"name": "AVG"},
                "connections": [{"clientId": "a\u00e9", "clientAddr": null, "language": "JAVA",
                                 "version": -3, "extra": [1, {"x": null}]},
                                {"clientId": "b", "strategy": null, "clientAddr": "1.2.3.4:5"}]},
                       "g2": {"connections": [], "subscriptions": []},
                       "g3": {"connections": [{"clientId": "c", "strategy": null}]}},
            "offsets": [] } "#;
        let r = read(text).unwrap();
        assert_eq!(r.counts, vec![2, 0, 1]);
        assert_eq!(r.client_id.len(), 3);
        assert_eq!(r.client_id.get(0), Some("a\u{e9}"));
        assert_eq!(r.client_id.get(2), Some("c"));
        assert_eq!(r.client_addr.get(0), None);
        assert_eq!(r.client_addr.get(1), Some("1.2.3.4:5"));
        assert_eq!(r.client_addr.validity.nulls, 2);
        assert_eq!(r.language.get(0), Some("JAVA"));
        assert_eq!(r.version.get(0), Some(-3));
        assert_eq!(r.version.get(1), None);
        assert_eq!(r.strategy, vec![-1, 0, 0]);
        assert_eq!(r.strategy_texts, vec!["null".to_string()]);
        assert_eq!(
            r.skeleton,
            r#"{"topics":{"T": {"queueDatas": [{"brokerName": "b", "readQueueNums": 4}]}},"groups":{"g1":{"subscriptions":["T"],"strategy":{"name": "AVG"},"connections":[]},"g2":{"connections":[],"subscriptions":[]},"g3":{"connections":[]}},"offsets":[]}"#
        );
    }

    #[test]
    fn unsure_texts_give_none() {
        let ok = r#"{"groups": {"g": {"connections": [{"clientId": "a"}]}}}"#;
        assert!(read(ok).is_some());
        for bad in [
            "",
            "{",
            "[]",
            r#"{"topics": {}}"#,                           // no groups
            r#"{"groups": [], "topics": {}}"#,             // groups not an object
            r#"{"groups": {"g": []}}"#,                    // group not an object
            r#"{"groups": {"g": {"subscriptions": []}}}"#, // no connections
            r#"{"groups": {"g": {"connections": {}}}}"#,   // not an array
            r#"{"groups": {"g": {"connections": [1]}}}"#,  // not an object
            r#"{"groups": {"g": {"connections": [{}]}}}"#, // no clientId
            r#"{"groups": {"g": {"connections": [{"clientId": null}]}}}"#, // null clientId
            r#"{"groups": {"g": {"connections": [{"clientId": 5}]}}}"#, // not a str
            r#"{"groups": {"g": {"connections": [{"clientId": "a", "version": 1.0}]}}}"#,
            r#"{"groups": {"g": {"connections": [{"clientId": "a", "version": true}]}}}"#,
            r#"{"groups": {"g": {"connections": [{"clientId": "a", "version": 99999999999999999999}]}}}"#,
            r#"{"groups": {"g": {"connections": [{"clientId": "a", "language": 1}]}}}"#,
            r#"{"groups": {"g": {"connections": [{"clientId": "a", "x": NaN}]}}}"#,
            r#"{"groups": {"g": {"connections": [{"clientId": "\ud800"}]}}}"#, // lone surrogate
            r#"{"groups": {"g": {"connections": [{"clientId": "a", "clientId": "b"}]}}}"#,
            r#"{"groups": {"g": {"connections": []}, "g": {"connections": []}}}"#,
            r#"{"groups": {"g": {"connections": []}}, "groups": {}}"#,
            r#"{"groups": {"g": {"connections": [{"client\u0049d": "a"}]}}}"#, // escaped key
            "{\"groups\": {\"g\": {\"connections\": [{\"clientId\": \"a\tb\"}]}}}", // raw control
            "\u{feff}{\"groups\": {}}",                                        // BOM
            r#"{"groups": {}} x"#,                                             // trailing
            r#"{"groups": {},}"#,                                              // trailing comma
        ] {
            assert!(read(bad).is_none(), "{bad}");
        }
        let long = format!(
            r#"{{"groups": {{"g": {{"connections": [{{"clientId": "a", "x": {}}}]}}}}}}"#,
            "1".repeat(4301)
        );
        assert!(read(&long).is_none());
        let fine = format!(
            r#"{{"groups": {{"g": {{"connections": [{{"clientId": "a", "x": "{}"}}]}}}}}}"#,
            "1".repeat(4300)
        );
        assert!(read(&fine).is_some());
        assert!(read_connections(b"{\"groups\": {\"\xff\": {\"connections\": []}}}").is_none());
    }

    #[test]
    fn escapes_in_values_are_decoded() {
        let r = read(
            r#"{"groups": {"g": {"connections": [{"clientId": "a\"b\\c\u0041\n\ud83d\ude00"}]}}}"#,
        )
        .unwrap();
        assert_eq!(r.client_id.get(0), Some("a\"b\\cA\n\u{1f600}"));
    }

    #[test]
    fn strategies_are_interned_as_written() {
        let r = read(
            r#"{"groups": {"g": {"connections": [{"clientId": "a", "strategy": "AVG"},
                {"clientId": "b", "strategy": {"name": "AVG"}}, {"clientId": "c", "strategy": "AVG"}]}}}"#,
        )
        .unwrap();
        assert_eq!(r.strategy, vec![0, 1, 0]);
        assert_eq!(r.strategy_texts, vec![r#""AVG""#, r#"{"name": "AVG"}"#]);
    }
}
