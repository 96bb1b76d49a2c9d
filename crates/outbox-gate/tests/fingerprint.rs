//! The gate's fingerprint (SPEC §14: the same key with another request is `422`, never a
//! replay of the first one's receipt). Two requests a handler can tell apart must have two
//! fingerprints; every other request keeps the fingerprint it had before, so a key in flight
//! across an upgrade of the gate still matches its record.

use outbox_gate::request::fingerprint;

fn post(body: &str) -> String {
    fingerprint("POST", "/op", None, body.as_bytes())
}

/// The pinned values are SHA-256 of the canonical texts, computed outside Rust
/// (`{"body":…,"ifMatch":…,"method":…,"path":…}`, keys sorted, no spaces).
#[test]
fn ordinary_requests_keep_the_fingerprint_they_had() {
    let body = br#"{ "w": 2.5, "b": [true, null, "x\u0001"], "a": 1 }"#;
    assert_eq!(
        fingerprint("POST", "/api/records/workout", None, body),
        "b51f2b3540e0f7e844529eb64906997a407df3fa1e5f4a2116331baa9f01afa1"
    );
    assert_eq!(
        fingerprint("DELETE", "/api/records/workout/1?x=1", Some("3"), b""),
        "c6db02131f9aa136da189fa621540b7d7751db12debb51cea2c9aa840dd254cc"
    );
    // 2^53 itself is exact as a double: written as before.
    assert_eq!(post(r#"{"n":9007199254740992}"#), "b63e38da7a7c5e824962ae1df0cefc7271c65343ec16b8de3a492a255b368dff");
    assert_eq!(post(r#"{"a":1,"b":2}"#), post(r#"{"b":2, "a":1}"#), "key order and spaces do not count");
}

#[test]
fn integers_beyond_2_53_count_by_their_digits() {
    // Both are 2^53 as a double; a handler reading an i64 or u64 sees two numbers.
    assert_ne!(post(r#"{"n":9007199254740993}"#), post(r#"{"n":9007199254740992}"#));
    assert_ne!(post(r#"{"n":-9007199254740993}"#), post(r#"{"n":-9007199254740992}"#));
    assert_ne!(post(r#"{"n":18446744073709551615}"#), post(r#"{"n":18446744073709551614}"#));
    // Swapped between keys: the digits are compared where they stand, not as a list.
    assert_ne!(
        post(r#"{"a":9007199254740993,"b":9007199254740991}"#),
        post(r#"{"b":9007199254740993,"a":9007199254740991}"#)
    );
    assert_eq!(post(r#"{"n":9007199254740993}"#), post(r#"{ "n" : 9007199254740993 }"#));
}

#[test]
fn integers_beyond_64_bits_count_by_their_bytes() {
    // serde_json reads them as doubles: each pair is one double.
    assert_ne!(post(r#"{"n":18446744073709551616}"#), post(r#"{"n":18446744073709551617}"#));
    assert_ne!(post(r#"{"n":-9223372036854775809}"#), post(r#"{"n":-9223372036854775810}"#));
    assert_ne!(post(r#"[[{"n":18446744073709551616}]]"#), post(r#"[[{"n":18446744073709551617}]]"#), "nested");
    assert_eq!(post(r#"{"n":18446744073709551616}"#), post(r#"{"n":18446744073709551616}"#));
}

#[test]
fn an_integer_is_not_a_number_written_with_a_fraction_or_an_exponent() {
    // A handler reading an i64 takes the first of each pair and refuses the second.
    assert_ne!(post(r#"{"n":1}"#), post(r#"{"n":1.0}"#));
    assert_ne!(post(r#"{"n":100}"#), post(r#"{"n":1e2}"#));
    assert_ne!(post(r#"{"n":0}"#), post(r#"{"n":-0}"#));
    assert_ne!(post(r#"{"n":0.0}"#), post(r#"{"n":-0.0}"#));
    // Numbers still count by value where every reader sees one number.
    assert_eq!(post(r#"{"n":1.0}"#), post(r#"{"n":1e0}"#));
    assert_eq!(post(r#"{"n":0.5}"#), post(r#"{"n":5e-1}"#));
    assert_eq!(post(r#"{"n":1e18}"#), post(r#"{"n":1000000000000000000.0}"#));
    // From 2^63 on a whole double may be an integer literal that lost its digits: bytes.
    assert_ne!(post(r#"{"n":1e21}"#), post(r#"{"n":1000000000000000000000.0}"#));
}

/// With serde_json's `raw_value` feature (which axum turns on) a `Value` reads this object
/// as the JSON in its string: the two bodies shared a fingerprint; a derived struct tells
/// them apart.
#[test]
fn serde_json_s_raw_value_token_is_an_ordinary_key() {
    assert_ne!(post(r#"{"$serde_json::private::RawValue":"{\"a\":1}"}"#), post(r#"{"a":1}"#));
}

#[test]
fn a_body_that_is_not_json_is_not_the_json_of_its_hash() {
    let sha = "b0e8a2e5ee3df2ec17c1cb67fea0bcbee27d4d24e1c2d0b52aa4a4b5ae05f98f"; // any hex works
    let raw = post("not json");
    assert_ne!(raw, post(&format!(r#"{{"bytes":"{sha}"}}"#)));
    // Whatever hash the JSON names, its own bytes' included.
    let own = {
        use sha2::{Digest, Sha256};
        Sha256::digest(b"not json").iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    assert_ne!(raw, post(&format!(r#"{{"bytes":"{own}"}}"#)));
    assert_ne!(raw, post("not json!"), "two bodies that are not JSON are compared by their bytes");
    assert_eq!(raw, post("not json"));
}

#[test]
fn an_empty_body_is_not_the_json_null() {
    assert_ne!(post(""), post("null"));
    assert_eq!(post("null"), post(" null "));
}

#[test]
fn an_object_naming_a_key_twice_is_not_the_object_with_its_last_value() {
    assert_ne!(post(r#"{"a":1,"a":2}"#), post(r#"{"a":2}"#));
    assert_ne!(post(r#"[{"a":1,"a":2}]"#), post(r#"[{"a":2}]"#), "nested too");
    assert_eq!(post(r#"{"a":{"a":1}}"#), post(r#"{"a":{"a":1}}"#), "one key per object is fine");
}

/// The fingerprint of before (until 2026-12-03), for the bodies it read as JSON.
fn old_fingerprint(method: &str, path: &str, if_match: Option<&str>, body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let body: serde_json::Value =
        if body.is_empty() { serde_json::Value::Null } else { serde_json::from_slice(body).unwrap() };
    let canon = outbox_core::fingerprint::canonical_json(
        &serde_json::json!({"method": method, "path": path, "ifMatch": if_match, "body": body}),
    );
    Sha256::digest(canon.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Bodies as a browser's `JSON.stringify` writes them (integers within 2^53, fractions,
/// strings with escapes and characters beyond the BMP, nesting, any key order), with one
/// `If-Match` line or none: the fingerprint is the one of before, so keys in flight across
/// the upgrade still match. A seeded generator: the same bodies every run.
#[test]
fn every_body_a_browser_writes_keeps_the_fingerprint_it_had() {
    use serde_json::{Map, Number, Value};
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    fn value(next: &mut dyn FnMut(u64) -> u64, depth: u32) -> Value {
        let text = |next: &mut dyn FnMut(u64) -> u64| -> String {
            let chars = ['a', 'Z', ' ', '"', '\\', '\n', '\u{1}', '\u{7f}', 'é', '\u{e000}', '😀', '/'];
            (0..next(6)).map(|_| chars[next(chars.len() as u64) as usize]).collect()
        };
        match next(if depth >= 4 { 6 } else { 8 }) {
            0 => Value::Null,
            1 => Value::Bool(next(2) == 0),
            2 => Value::from(next(1 << 53) as i64 * if next(2) == 0 { 1 } else { -1 }),
            3 => Value::from(next(1000) as i64 - 500),
            4 => Number::from_f64((next(1 << 40) as f64 + 0.5) / (1 + next(1000)) as f64)
                .map_or(Value::Null, Value::Number),
            5 => Value::String(text(next)),
            6 => Value::Array((0..next(5)).map(|_| value(next, depth + 1)).collect()),
            _ => Value::Object((0..next(5)).map(|_| (text(next), value(next, depth + 1))).collect::<Map<_, _>>()),
        }
    }
    for i in 0..3_000 {
        let v = value(&mut next, 0);
        if v.is_null() {
            continue; // the body `null` is now apart from an empty body (above)
        }
        let body = if i % 2 == 0 { serde_json::to_vec(&v) } else { serde_json::to_vec_pretty(&v) }.unwrap();
        let if_match = ["3", "\"etag-1\"", "W/\"x\""][i % 3];
        let if_match = (i % 4 != 0).then_some(if_match);
        assert_eq!(
            fingerprint("PATCH", "/api/records/workout/7?x=1", if_match, &body),
            old_fingerprint("PATCH", "/api/records/workout/7?x=1", if_match, &body),
            "{}",
            String::from_utf8_lossy(&body)
        );
    }
}
