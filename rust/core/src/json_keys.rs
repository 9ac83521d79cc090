//! A quick pass over a JSON text telling whether any object repeats a key, so that a reader which
//! must refuse duplicated keys (a snapshot file) can parse with its fast native parser and keep
//! the slow key-checking hook for the texts this pass cannot clear.
//!
//! Keys are compared as written: a key holding an escape (`\u0061` is `a`) makes the answer
//! [`KeyScan::Unsure`], as does anything that is not well-formed JSON (the caller's parser then
//! names the problem). Scalars are skipped, not checked: `NaN` or a bad number never gives a wrong
//! `Distinct`, since the caller's parser still reads the whole text.
//!
//! ```
//! use mqbalance_core::json_keys::{scan_keys, KeyScan};
//! assert_eq!(scan_keys(br#"{"a": 1, "b": [{"a": 2}]}"#), KeyScan::Distinct);
//! assert_eq!(scan_keys(br#"{"a": 1, "b": {"c": 2, "c": 3}}"#), KeyScan::Duplicate);
//! assert_eq!(scan_keys(br#"{"a": 1, "\u0061": 2}"#), KeyScan::Unsure);
//! ```

use rustc_hash::FxHashSet;

/// What [`scan_keys`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyScan {
    /// Well-formed as far as the structure goes, and no object repeats a key.
    Distinct,
    /// Some object repeats a key (byte for byte).
    Duplicate,
    /// Could not tell: an escaped key, malformed or too deeply nested text.
    Unsure,
}

/// Deeper than this is left to the caller's parser (which has its own limit).
const MAX_DEPTH: usize = 512;

/// Objects with more keys than this look keys up in a hash set.
const LINEAR_KEYS: usize = 16;

enum Stop {
    Duplicate,
    Unsure,
}

struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
}

/// Whether any object of the JSON `text` repeats a key.
pub fn scan_keys(text: &[u8]) -> KeyScan {
    let mut s = Scanner { text, at: 0 };
    let result = s.value(0).and_then(|()| {
        s.skip_space();
        if s.at == s.text.len() {
            Ok(())
        } else {
            Err(Stop::Unsure)
        }
    });
    match result {
        Ok(()) => KeyScan::Distinct,
        Err(Stop::Duplicate) => KeyScan::Duplicate,
        Err(Stop::Unsure) => KeyScan::Unsure,
    }
}

impl<'a> Scanner<'a> {
    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn value(&mut self, depth: usize) -> Result<(), Stop> {
        if depth > MAX_DEPTH {
            return Err(Stop::Unsure);
        }
        self.skip_space();
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(|_| ()),
            Some(_) => self.scalar(),
            None => Err(Stop::Unsure),
        }
    }

    /// A string starting at the opening quote: its raw bytes, and whether it holds an escape.
    fn string(&mut self) -> Result<(&'a [u8], bool), Stop> {
        let start = self.at + 1;
        let mut i = start;
        let mut escaped = false;
        while let Some(&b) = self.text.get(i) {
            match b {
                b'"' => {
                    self.at = i + 1;
                    return Ok((&self.text[start..i], escaped));
                }
                b'\\' => {
                    escaped = true;
                    i += 2;
                }
                _ => i += 1,
            }
        }
        Err(Stop::Unsure)
    }

    fn scalar(&mut self) -> Result<(), Stop> {
        let start = self.at;
        while let Some(b) = self.peek() {
            if matches!(
                b,
                b',' | b']' | b'}' | b':' | b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'{' | b'['
            ) {
                break;
            }
            self.at += 1;
        }
        if self.at == start {
            Err(Stop::Unsure)
        } else {
            Ok(())
        }
    }

    fn array(&mut self, depth: usize) -> Result<(), Stop> {
        self.at += 1;
        self.skip_space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        loop {
            self.value(depth + 1)?;
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Stop::Unsure),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<(), Stop> {
        self.at += 1;
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        let mut few: Vec<&'a [u8]> = Vec::new();
        let mut many: Option<FxHashSet<&'a [u8]>> = None;
        loop {
            self.skip_space();
            if self.peek() != Some(b'"') {
                return Err(Stop::Unsure);
            }
            let (key, escaped) = self.string()?;
            if escaped {
                return Err(Stop::Unsure);
            }
            let repeated = if let Some(set) = &mut many {
                !set.insert(key)
            } else if few.contains(&key) {
                true
            } else {
                few.push(key);
                if few.len() > LINEAR_KEYS {
                    many = Some(few.drain(..).collect());
                }
                false
            };
            if repeated {
                return Err(Stop::Duplicate);
            }
            self.skip_space();
            if self.peek() != Some(b':') {
                return Err(Stop::Unsure);
            }
            self.at += 1;
            self.value(depth + 1)?;
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Stop::Unsure),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_large_objects() {
        let many: Vec<String> = (0..100).map(|i| format!("\"k{i}\": {i}")).collect();
        let text = format!("{{{}}}", many.join(", "));
        assert_eq!(scan_keys(text.as_bytes()), KeyScan::Distinct);
        let text = format!("{{{}, \"k57\": 0}}", many.join(", "));
        assert_eq!(scan_keys(text.as_bytes()), KeyScan::Duplicate);
        assert_eq!(
            scan_keys(br#"[{"a": 1}, {"a": 2}, {"b": {"a": [1, {"a": null}]}}]"#),
            KeyScan::Distinct
        );
        assert_eq!(
            scan_keys(br#" {"x": [{"a": 1, "b": "\"}", "a": 2}]} "#),
            KeyScan::Duplicate
        );
    }

    #[test]
    fn keys_are_compared_after_strings_end() {
        // A quote escaped inside a value does not end it; keys differing in a suffix are distinct.
        assert_eq!(
            scan_keys(br#"{"a": "x\"y", "ab": 1, "a\u00e9": 2}"#),
            KeyScan::Unsure
        );
        assert_eq!(
            scan_keys(br#"{"a": "x\"y", "ab": 1, "a ": 2}"#),
            KeyScan::Distinct
        );
        assert_eq!(
            scan_keys("{\"é\": 1, \"e\": 2}".as_bytes()),
            KeyScan::Distinct
        );
    }

    #[test]
    fn malformed_text_is_unsure() {
        for text in [
            "",
            "{",
            "{\"a\" 1}",
            "{\"a\": 1,}",
            "[1, 2",
            "{\"a\": 1} x",
            "{1: 2}",
            "\"open",
        ] {
            assert_eq!(scan_keys(text.as_bytes()), KeyScan::Unsure, "{text}");
        }
        let deep = "[".repeat(600) + &"]".repeat(600);
        assert_eq!(scan_keys(deep.as_bytes()), KeyScan::Unsure);
        assert_eq!(scan_keys(b"[NaN, -Infinity, 1e5, true]"), KeyScan::Distinct);
    }
}
