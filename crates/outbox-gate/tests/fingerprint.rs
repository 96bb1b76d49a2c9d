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
