//! Java orderings: `String.compareTo` (UTF-16 code units) and `MessageQueue.compareTo`.
//!
//! Java compares strings by UTF-16 code units; Rust and Python compare by code point. The two differ
//! only when a supplementary character (UTF-16 surrogates `D800..DFFF`) meets a BMP character in
//! `E000..FFFF` at the first difference: Java puts the surrogate first. On UTF-8 bytes that is the
//! case where the first differing bytes are a lead byte `EE`/`EF` against `F0..F4`.
//!
//! ```
//! use std::cmp::Ordering;
//! use mqbalance_core::order::java_cmp;
//! assert_eq!(java_cmp("\u{FF01}", "😀"), Ordering::Greater); // Java: surrogate 0xD83D < 0xFF01
//! assert_eq!(java_cmp("a", "ab"), Ordering::Less);
//! ```

use std::cmp::Ordering;

/// The length of the longest common prefix of two byte strings, eight bytes at a time: ids
/// that share a long prefix (`member-0001`, `10.0.0.1@…`) are compared mostly word by word.
#[inline]
fn common_prefix(left: &[u8], right: &[u8]) -> usize {
    let len = left.len().min(right.len());
    let (mut words_l, mut words_r) = (left[..len].chunks_exact(8), right[..len].chunks_exact(8));
    let mut done = 0;
    for (wl, wr) in (&mut words_l).zip(&mut words_r) {
        let wl = u64::from_le_bytes(wl.try_into().unwrap_or([0; 8]));
        let wr = u64::from_le_bytes(wr.try_into().unwrap_or([0; 8]));
        if wl != wr {
            return done + ((wl ^ wr).trailing_zeros() / 8) as usize; // the first differing byte
        }
        done += 8;
    }
    done + words_l
        .remainder()
        .iter()
        .zip(words_r.remainder())
        .take_while(|(x, y)| x == y)
        .count()
}

/// Java `String.compareTo` on two Rust strings, computed on their UTF-8 bytes without transcoding.
#[inline]
pub fn java_cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let common = common_prefix(a, b);
    match (a.get(common), b.get(common)) {
        (Some(&x), Some(&y)) => {
            // Both are lead bytes here when >= 0xEE (continuation bytes are 0x80..=0xBF), and the
            // shared prefix ends on a character boundary in both strings.
            let x_supp = x >= 0xF0;
            let y_supp = y >= 0xF0;
            if x >= 0xEE && y >= 0xEE && x_supp != y_supp {
                // Supplementary (surrogate pair, 0xD8xx) sorts before U+E000..U+FFFF in UTF-16.
                if x_supp {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            } else {
                x.cmp(&y)
            }
        }
        _ => a.len().cmp(&b.len()),
    }
}

/// Stable permutation that sorts `items` in Java string order (`Collections.sort`).
pub fn sort_order<S: AsRef<str>>(items: &[S]) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..items.len() as u32).collect();
    idx.sort_by(|&x, &y| java_cmp(items[x as usize].as_ref(), items[y as usize].as_ref()));
    idx
}

/// Rank of each string in Java order (equal strings share a rank). Used to turn dictionary codes
/// into sortable integers.
pub fn java_ranks<S: AsRef<str>>(items: &[S]) -> Vec<u32> {
    let order = sort_order(items);
    let mut ranks = vec![0u32; items.len()];
    let mut rank = 0u32;
    for (k, &i) in order.iter().enumerate() {
        if k > 0
            && java_cmp(
                items[order[k - 1] as usize].as_ref(),
                items[i as usize].as_ref(),
            ) != Ordering::Equal
        {
            rank += 1;
        }
        ranks[i as usize] = rank;
    }
    ranks
}

/// Java `String.hashCode`: `h = 31 * h + c` over UTF-16 code units, wrapping 32-bit.
///
/// ```
/// assert_eq!(mqbalance_core::order::java_hash_code("😀"), 0xD83D * 31 + 0xDE00); // surrogate pair
/// assert_eq!(mqbalance_core::order::java_hash_code("a"), 97);
/// assert_eq!(mqbalance_core::order::java_hash_code("ab"), 97 * 31 + 98);
/// ```
pub fn java_hash_code(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// Stable permutation that sorts `keys` ascending: an LSD radix sort over only the bits the
/// largest key uses (11 bits a pass), so rows packed into one integer key — (group, topic, broker,
/// queue) ranks — sort in a few linear passes. Each pass moves (key, position) pairs, read in
/// order; the digits' counts of every pass come from one read of the keys, and a pass whose digit
/// is the same for every key is skipped.
///
/// ```
/// use mqbalance_core::order::key_order;
/// assert_eq!(key_order(&[30, 10, 20, 10]), vec![1, 3, 2, 0]);
/// assert_eq!(key_order(&[]), Vec::<u32>::new());
/// ```
pub fn key_order(keys: &[u64]) -> Vec<u32> {
    const BITS: u32 = 11;
    const MASK: u64 = (1 << BITS) - 1;
    let used = 64 - keys.iter().fold(0u64, |acc, &k| acc | k).leading_zeros();
    let passes = used.div_ceil(BITS) as usize;
    let mut counts = vec![[0u32; 1 << BITS]; passes];
    for &k in keys {
        for (p, count) in counts.iter_mut().enumerate() {
            count[((k >> (p as u32 * BITS)) & MASK) as usize] += 1;
        }
    }
    let mut pairs: Vec<(u64, u32)> = keys.iter().zip(0u32..).map(|(&k, i)| (k, i)).collect();
    let mut next = vec![(0u64, 0u32); keys.len()];
    for (p, count) in counts.iter().enumerate() {
        if count.iter().any(|&c| c as usize == keys.len()) {
            continue; // one digit for every key: the order stays
        }
        let shift = p as u32 * BITS;
        let mut start = [0usize; 1 << BITS];
        let mut at = 0;
        for (s, &c) in start.iter_mut().zip(count.iter()) {
            *s = at;
            at += c as usize;
        }
        for &(k, i) in &pairs {
            let d = ((k >> shift) & MASK) as usize;
            next[start[d]] = (k, i);
            start[d] += 1;
        }
        std::mem::swap(&mut pairs, &mut next);
    }
    pairs.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16_cmp(a: &str, b: &str) -> Ordering {
        a.encode_utf16().cmp(b.encode_utf16())
    }

    #[test]
    fn matches_utf16_on_tricky_pairs() {
        let words = [
            "",
            "a",
            "ab",
            "\u{FF01}",
            "😀",
            "\u{E000}",
            "\u{FFFF}",
            "\u{10000}",
            "中",
            "é",
            "a😀",
            "a\u{FF01}",
            "\u{D7FF}",
        ];
        for x in words {
            for y in words {
                assert_eq!(java_cmp(x, y), utf16_cmp(x, y), "{x:?} vs {y:?}");
            }
        }
    }

    #[test]
    fn common_prefix_finds_the_first_difference_at_every_position() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n as u8).collect();
            assert_eq!(common_prefix(&a, &a), n);
            assert_eq!(common_prefix(&a, &a[..n / 2]), n / 2);
            for k in 0..n {
                let mut b = a.clone();
                b[k] ^= 0x40;
                assert_eq!(common_prefix(&a, &b), k, "n {n}, differing at {k}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn java_cmp_is_utf16_order(a in "\\PC{0,6}", b in "\\PC{0,6}") {
            proptest::prop_assert_eq!(java_cmp(&a, &b), utf16_cmp(&a, &b));
        }

        #[test]
        fn java_cmp_is_utf16_order_after_a_long_shared_prefix(p in "\\PC{0,24}", a in "\\PC{0,6}", b in "\\PC{0,6}") {
            let (a, b) = (format!("{p}{a}"), format!("{p}{b}"));
            proptest::prop_assert_eq!(java_cmp(&a, &b), utf16_cmp(&a, &b));
        }
    }
}
