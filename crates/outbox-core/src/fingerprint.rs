//! Request fingerprint (SPEC §2): lowercase hex SHA-256 of the RFC 8785 (JCS) canonical
//! JSON of exactly `{body, kind, revision, target}`, `revision: null` when absent.

use crate::kind::Kind;
use crate::sha256::{hex, sha256};
use serde_json::Value;

/// The fingerprint of one request.
#[must_use]
pub fn fingerprint(kind: Kind, target: &str, body: &Value, revision: Option<&Value>) -> String {
    let mut canon = String::new();
    canon.push_str("{\"body\":");
    write_canonical(&mut canon, body);
    canon.push_str(",\"kind\":");
    write_string(&mut canon, kind.as_str());
    canon.push_str(",\"revision\":");
    write_canonical(&mut canon, revision.unwrap_or(&Value::Null));
    canon.push_str(",\"target\":");
    write_string(&mut canon, target);
    canon.push('}');
    hex(&sha256(canon.as_bytes()))
}

/// Writes `value` as JCS canonical JSON (keys sorted by UTF-16 code units, ECMAScript
/// number form, minimal string escapes).
pub fn write_canonical(out: &mut String, value: &Value) {
    write::<false>(out, value);
}

/// [`canonical_json`], except that an integer beyond 2^53 that serde_json read exactly (an
/// `i64` or `u64`) keeps its digits instead of becoming the nearest double, and a whole
/// number serde_json read as a double (written `1.0`, `1e2` or `-0`) is written with `.0`
/// after it (and `-0` keeps its sign). For a server comparing two requests (the gate, SPEC
/// §14): a handler that reads such numbers as integers sees two requests where JCS writes
/// one. Equal to [`canonical_json`] for every value without such numbers — every value
/// `JSON.stringify` writes, but for whole numbers of 1e21 and more.
#[must_use]
pub fn canonical_json_exact(value: &Value) -> String {
    let mut s = String::new();
    write::<true>(&mut s, value);
    s
}

/// `EXACT`: the exact form; a parameter of the type, so that the module the library ships
/// (which writes only JCS) holds no code of the other.
fn write<const EXACT: bool>(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number::<EXACT>(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write::<EXACT>(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = Vec::with_capacity(map.len());
            for k in map.keys() {
                keys.push(k);
            }
            crate::sort::stable_by(&mut keys, |a, b| utf16_order(a, b));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write::<EXACT>(out, &map[k]);
            }
            out.push('}');
        }
    }
}

/// The order of `a` and `b` by their UTF-16 code units (JCS's order of keys), read char by
/// char: smaller in the wasm module than comparing their `encode_utf16` iterators (issue
/// 35). The first chars that differ decide: a char beyond U+FFFF is written from a high
/// surrogate (U+D800..U+DBFF), after every char below U+D800 and before every char from
/// U+E000 on, whose own code units they are ([`first_unit`]); two chars beyond U+FFFF are
/// in the order of their surrogate pairs, which is the order of the chars themselves.
fn utf16_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut a, mut b) = (a.chars(), b.chars());
    loop {
        match (a.next(), b.next()) {
            (Some(x), Some(y)) if x == y => {}
            (Some(x), Some(y)) => return first_unit(x).cmp(&first_unit(y)).then(x.cmp(&y)),
            (x, y) => return x.is_some().cmp(&y.is_some()),
        }
    }
}

/// Where `c`'s first UTF-16 code unit sorts among the chars of one code unit: a char
/// beyond U+FFFF as U+D800, the first high surrogate (no char is a surrogate itself).
fn first_unit(c: char) -> u32 {
    let n = u32::from(c);
    if n >= 0x1_0000 {
        0xD800
    } else {
        n
    }
}

/// Canonical JSON of a value, as a string.
#[must_use]
pub fn canonical_json(value: &Value) -> String {
    let mut s = String::new();
    write_canonical(&mut s, value);
    s
}

/// JCS writes every number as the double it is (integers beyond 2^53 are not exact in JS
/// either): one path, ECMAScript's form, which for an integer up to 2^53 is its digits. The
/// exact form writes an integer serde_json read as one with its own digits.
fn write_number<const EXACT: bool>(out: &mut String, n: &serde_json::Number) {
    if EXACT && (n.is_i64() || n.is_u64()) {
        // The integer's digits through serde_json's writer of a `Value`, which the module
        // holds anyway, not its `Display` (issue 35): the same digits.
        out.push_str(&crate::text::json(&Value::Number(n.clone())));
        return;
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f == 0.0 {
        // -0 is written as 0 (JCS); the exact form keeps the sign.
        out.push_str(if EXACT && f.is_sign_negative() { "-0" } else { "0" });
    } else {
        push_js_number(out, f);
    }
    if EXACT && f.fract() == 0.0 {
        // A whole number read from a fraction or an exponent (`1.0`, `1e2`, `-0`): not an
        // integer to a typed reader, which refuses it where it takes `1` or `100`.
        out.push_str(".0");
    }
}

/// A finite, non-zero `f` as ECMAScript's `Number::toString` writes it (the form JCS
/// takes). Its digits are serde_json's, which the module holds anyway: the shortest that
/// read back as `f`, the nearest to `f` when several do — the digits ECMAScript picks (a
/// test checks them against `ryu-js`, the crate that wrote them before: its tables and
/// code were about 4 KB of the wasm module, issue 35). Only where the point goes and the
/// exponent's form are ECMAScript's own: laid out here from the digits and their exponent.
fn push_js_number(out: &mut String, f: f64) {
    // Through serde_json's writer of a `Value`, which the module holds anyway, not the
    // number's `Display` (issue 35: that linked core::fmt's path for it); the same digits.
    let text = serde_json::Number::from_f64(f).map_or(String::new(), |n| crate::text::json(&Value::Number(n)));
    // `text` is `-`? digits (`.` digits)? (`e` sign? digits)?: the value is
    // 0.`digits` × 10^`point`, once the leading zeros are gone.
    let mut digits: Vec<u8> = Vec::new();
    let mut point: i32 = 0;
    let mut before_dot = true;
    let mut bytes = text.bytes();
    for b in bytes.by_ref() {
        match b {
            b'-' => out.push('-'),
            b'.' => before_dot = false,
            b'0'..=b'9' => {
                if before_dot {
                    point += 1;
                }
                if b == b'0' && digits.is_empty() {
                    point -= 1;
                } else {
                    digits.push(b);
                }
            }
            _ => break, // `e` or `E`
        }
    }
    let mut exp: i32 = 0;
    let mut negative = false;
    for b in bytes {
        match b {
            b'-' => negative = true,
            b'0'..=b'9' => exp = exp * 10 + i32::from(b - b'0'),
            _ => {}
        }
    }
    point += if negative { -exp } else { exp };
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    let k = digits.len() as i32;
    // A loop of pushes, not `extend` of a char iterator: no copy of its own (issue 35).
    let push = |out: &mut String, d: &[u8]| {
        for &b in d {
            out.push(char::from(b));
        }
    };
    if k <= point && point <= 21 {
        push(out, &digits);
        for _ in k..point {
            out.push('0');
        }
    } else if 0 < point && point <= 21 {
        push(out, &digits[..point as usize]);
        out.push('.');
        push(out, &digits[point as usize..]);
    } else if -6 < point && point <= 0 {
        out.push_str("0.");
        for _ in point..0 {
            out.push('0');
        }
        push(out, &digits);
    } else {
        push(out, &digits[..1]);
        if k > 1 {
            out.push('.');
            push(out, &digits[1..]);
        }
        // Never 0 here (an exponent form has `point` ≤ −6 or > 21), so its sign is all
        // there is to tell.
        let e = point - 1;
        out.push_str(if e.is_negative() { "e-" } else { "e+" });
        let e = e.unsigned_abs();
        for unit in [100, 10, 1] {
            if e >= unit || unit == 1 {
                out.push(char::from(b'0' + (e / unit % 10) as u8));
            }
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                // `\u00XX`, lowercase hex (JCS).
                out.push_str(if (c as u32) < 0x10 { "\\u000" } else { "\\u001" });
                out.push(char::from(b"0123456789abcdef"[c as usize & 0xf]));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_ordered_by_their_utf16_code_units() {
        // Every string of up to three chars from chars around the places UTF-16 order and
        // code point order part (U+E000..U+FFFF sort after the surrogates of U+10000 and
        // up), with high surrogates shared and not: the same order as `encode_utf16`'s.
        let chars = [
            'a',
            'z',
            '\u{e9}',
            '\u{d7ff}',
            '\u{e000}',
            '\u{ffff}',
            '\u{10000}',
            '\u{103ff}',
            '\u{10400}',
            '\u{1f600}',
            '\u{10ffff}',
        ];
        let mut strings = vec![String::new()];
        for len in 1..=3 {
            let mut next = Vec::new();
            for s in strings.iter().filter(|s| s.chars().count() == len - 1) {
                for c in chars {
                    next.push(format!("{s}{c}"));
                }
            }
            strings.extend(next);
        }
        for a in &strings {
            for b in &strings {
                assert_eq!(utf16_order(a, b), a.encode_utf16().cmp(b.encode_utf16()), "{a:?} {b:?}");
            }
        }
    }

    fn js(f: f64) -> String {
        let mut s = String::new();
        push_js_number(&mut s, f);
        s
    }

    /// The numbers as `ryu-js` writes them (ECMAScript's form), for every kind of double:
    /// each power of ten and its neighbours at every exponent, the layout's boundaries, the
    /// subnormals and extremes, and a million doubles of random bits (and as many of a few digits).
    #[test]
    fn numbers_are_written_as_ryu_js_writes_them() {
        let mut buf = ryu_js::Buffer::new();
        let mut check = |f: f64| {
            if f.is_finite() && f != 0.0 {
                assert_eq!(js(f), buf.format(f), "{:e} ({:#x})", f, f.to_bits());
            }
        };
        for e in -330..=310 {
            let p: f64 = format!("1e{e}").parse().unwrap();
            for f in [p, -p, 1.5 * p, 123_456_789.0 * p, p / 3.0, 2.0 / 3.0 * p] {
                check(f);
                check(f64::from_bits(f.to_bits().wrapping_add(1)));
                check(f64::from_bits(f.to_bits().wrapping_sub(1)));
            }
        }
        for f in [
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            f64::EPSILON,
            5e-324,
            1e21,
            1e21 - 65536.0,
            123e20,
            1e-6,
            1.5e-6,
            1e-7,
            0.1,
            0.3,
            1.0,
            9_007_199_254_740_993.0,
            18_446_744_073_709_551_615.0,
        ] {
            check(f);
            check(-f);
        }
        for i in 1..=1000_u64 {
            check(i as f64);
            check(i as f64 / 1000.0);
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..1_000_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            check(f64::from_bits(seed));
            // Doubles of a few digits, as apps store them (12.5, 0.07, 3.25e-5).
            check((seed % 100_000) as f64 / [1.0, 10.0, 100.0, 1e4, 1e7][(seed >> 40) as usize % 5]);
        }
    }

    #[test]
    fn canonical_form_sorts_keys_and_formats_numbers_like_ecmascript() {
        let v = json!({"b": [1, 2.5, 1e21, -0.0, 1e-7], "a": "x\u{1}\"", "\u{e000}": 1, "\u{1f600}": 2});
        assert_eq!(
            canonical_json(&v),
            "{\"a\":\"x\\u0001\\\"\",\"b\":[1,2.5,1e+21,0,1e-7],\"\u{1f600}\":2,\"\u{e000}\":1}"
        );
    }

    #[test]
    fn fingerprint_matches_a_known_vector_and_ignores_key_order() {
        let a = fingerprint(Kind::Update, "workout:42", &json!({"w": 80, "a": true}), None);
        let b = fingerprint(Kind::Update, "workout:42", &json!({"a": true, "w": 80}), None);
        assert_eq!(a, b);
        // sha256 of {"body":{"a":true,"w":80},"kind":"update","revision":null,"target":"workout:42"}
        assert_eq!(a, "9a547e173f6a790e9233c253c2f7050eb652d1d8174007d48d79c516fe0e62a3");
        assert_ne!(a, fingerprint(Kind::Update, "workout:42", &json!({"a": true, "w": 80}), Some(&json!(3))));
    }

    #[test]
    fn integers_up_to_2_pow_53_are_written_with_their_digits() {
        let mut ints: Vec<i64> = vec![0, 1, -1, 7, 10, -10, 100, 999, 1_000_000, 123_456_789_012_345];
        for k in 0..=53 {
            ints.extend([(1i64 << k) - 1, 1i64 << k, -(1i64 << k), 1 - (1i64 << k)]);
        }
        let mut p = 1i64;
        while p <= 1i64 << 53 {
            ints.extend([p, -p, p - 1, p + 1]);
            p *= 10;
        }
        for i in ints.into_iter().filter(|i| i.unsigned_abs() <= 1 << 53) {
            assert_eq!(canonical_json(&json!(i)), i.to_string());
            assert_eq!(canonical_json(&json!(i.unsigned_abs())), i.unsigned_abs().to_string());
        }
    }

    #[test]
    fn integers_beyond_2_pow_53_are_written_as_the_double_jcs_makes_of_them() {
        assert_eq!(canonical_json(&json!(9_007_199_254_740_993_i64)), "9007199254740992");
        assert_eq!(canonical_json(&json!(-9_007_199_254_740_993_i64)), "-9007199254740992");
        assert_eq!(canonical_json(&json!(u64::MAX)), "18446744073709552000");
        assert_eq!(canonical_json(&json!(9_007_199_254_740_992_i64)), "9007199254740992");
    }

    #[test]
    fn the_exact_form_keeps_big_integers_digits_and_marks_whole_doubles_and_nothing_else_changes() {
        let v = json!({"b": [9_007_199_254_740_993_i64, -9_007_199_254_740_993_i64, u64::MAX], "a": [1, 2.5, 1e21, -0.0, 0.0, 100.0]});
        assert_eq!(
            canonical_json_exact(&v),
            "{\"a\":[1,2.5,1e+21.0,-0.0,0.0,100.0],\"b\":[9007199254740993,-9007199254740993,18446744073709551615]}"
        );
        let ordinary =
            json!({"b": [1, 2.5, -0.5, 1e-7, 9_007_199_254_740_992_i64], "a": "x\u{1}", "\u{1f600}": {"z": null}});
        assert_eq!(canonical_json_exact(&ordinary), canonical_json(&ordinary));
    }

    #[test]
    fn only_control_characters_are_escaped() {
        assert_eq!(canonical_json(&json!("a b\u{1f}")), "\"a b\\u001f\"");
        for c in (0..0x20u8).map(char::from) {
            let named = match c {
                '\u{08}' => "\\b",
                '\u{0c}' => "\\f",
                '\n' => "\\n",
                '\r' => "\\r",
                '\t' => "\\t",
                _ => "",
            };
            let want = if named.is_empty() { format!("\\u{:04x}", c as u32) } else { named.to_owned() };
            assert_eq!(canonical_json(&json!(c.to_string())), format!("\"{want}\""), "{c:?}");
        }
        assert_eq!(canonical_json(&json!("\u{20}\u{7f}\u{80}\"\\")), "\" \u{7f}\u{80}\\\"\\\\\"");
    }
}
