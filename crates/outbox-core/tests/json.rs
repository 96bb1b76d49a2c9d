//! The hand-written readers of `outbox_core::json` agree with serde's derives on every value:
//! the same result, or the same error message.

use outbox_core::intent::Prepared;
use outbox_core::{Outcome, Ticket};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};
use std::fmt::Debug;

/// Keys and strings that hit the fields and tags the readers know, and some they do not.
const WORDS: &[&str] = &[
    "type",
    "success",
    "transient",
    "auth",
    "permanent",
    "conflict",
    "receipt",
    "replayed",
    "code",
    "retryAfterMs",
    "actualRevision",
    "tabId",
    "fence",
    "target",
    "body",
    "revision",
    "other",
    "Success",
    "",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop_oneof![Just(0u64), Just(1), Just(42), Just(u64::from(u32::MAX)), Just(u64::from(u32::MAX) + 1)]
            .prop_map(Value::from),
        prop_oneof![Just(-1i64), Just(i64::MIN)].prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        prop_oneof![Just(1.5f64), Just(2.0), Just(1e21), Just(-0.0)].prop_map(Value::from),
        proptest::sample::select(WORDS).prop_map(|s| Value::String(s.to_owned())),
        "[a-z\"\\\\\u{1}é]{0,4}".prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((proptest::sample::select(WORDS), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>())),
        ]
    })
}

/// An object of known keys with random values, sometimes a known tag.
fn object() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec((proptest::sample::select(WORDS), value()), 0..6),
        proptest::option::of(proptest::sample::select(&WORDS[..6])),
    )
        .prop_map(|(kv, tag)| {
            let mut m: Map<String, Value> = kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            if let Some(t) = tag {
                m.insert("type".into(), json!(t));
            }
            Value::Object(m)
        })
}

fn agree<T: DeserializeOwned + PartialEq + Debug>(v: &Value, ours: Result<T, String>) -> Result<(), TestCaseError> {
    let theirs = serde_json::from_value::<T>(v.clone()).map_err(|e| e.to_string());
    prop_assert_eq!(ours, theirs, "on {}", v);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn outcome_reads_objects_as_serde_does(v in object()) {
        agree(&v, Outcome::from_json(&v))?;
    }

    #[test]
    fn ticket_reads_as_serde_does(v in prop_oneof![object(), value()]) {
        agree(&v, Ticket::from_json(&v))?;
    }

    #[test]
    fn prepared_reads_as_serde_does(v in prop_oneof![object(), value()]) {
        agree(&v, Prepared::from_json(&v))?;
    }
}

#[test]
fn the_usual_answers_and_mistakes() {
    for v in [
        json!({"type": "success", "receipt": {"serverId": 7, "revision": "r2"}}),
        json!({"type": "success", "replayed": true, "extra": 1}),
        json!({"type": "transient", "code": "NET", "retryAfterMs": 1500}),
        json!({"type": "transient", "retryAfterMs": 1.5}),
        json!({"type": "transient", "retryAfterMs": u64::MAX}),
        json!({"type": "auth"}),
        json!({"type": "permanent"}),
        json!({"type": "permanent", "code": null}),
        json!({"type": "conflict"}),
        json!({"type": "conflict", "actualRevision": null}),
        json!({"type": "nope"}),
        json!({"type": 3}),
        json!({}),
    ] {
        agree(&v, Outcome::from_json(&v)).unwrap();
    }
    for v in [
        json!({"tabId": "t", "fence": 3}),
        json!({"tabId": "t", "fence": -1}),
        json!({"fence": 2.5}),
        json!(["t", 1]),
        json!(["t"]),
        json!(["t", 1, 2]),
        json!("x"),
    ] {
        agree(&v, Ticket::from_json(&v)).unwrap();
    }
}

/// Structs that refuse unknown fields, with 0 to 3 fields, read by `json::fields` as the
/// binding reads the records declaration: serde's messages, name lists included.
#[derive(serde::Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct None0 {}
#[derive(serde::Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct One {
    a: Option<u32>,
}
#[derive(serde::Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Two {
    a: Option<u32>,
    b: Option<u32>,
}
#[derive(serde::Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Three {
    a: Option<u32>,
    b: Option<u32>,
    c: Option<u32>,
}

/// The first error `json::fields` gives on `v` for a struct of `names` (fields `Option<u32>`).
fn fields_error(v: &Value, expecting: &str, names: &[&str], deny: bool) -> Option<String> {
    let defaulted = vec![true; names.len()];
    outbox_core::json::fields(v, expecting, names, &defaulted, deny, |_, item| {
        outbox_core::json::optional(item, |x| outbox_core::json::integer::<u32>(x, "u32")).map(|_| ())
    })
    .err()
}

#[test]
fn unknown_fields_are_refused_with_serdes_list_of_names() {
    let v = json!({"zz": 1});
    let serde_says = |r: Result<(), String>| r.err();
    assert_eq!(
        fields_error(&v, "struct None0", &[], true),
        serde_says(serde_json::from_value::<None0>(v.clone()).map(|_| ()).map_err(|e| e.to_string()))
    );
    assert_eq!(
        fields_error(&v, "struct One", &["a"], true),
        serde_says(serde_json::from_value::<One>(v.clone()).map(|_| ()).map_err(|e| e.to_string()))
    );
    assert_eq!(
        fields_error(&v, "struct Two", &["a", "b"], true),
        serde_says(serde_json::from_value::<Two>(v.clone()).map(|_| ()).map_err(|e| e.to_string()))
    );
    assert_eq!(
        fields_error(&v, "struct Three", &["a", "b", "c"], true),
        serde_says(serde_json::from_value::<Three>(v.clone()).map(|_| ()).map_err(|e| e.to_string()))
    );
    assert!(fields_error(&v, "struct Three", &["a", "b", "c"], true).is_some_and(|e| e.contains("`zz`")));
    assert_eq!(fields_error(&v, "struct Three", &["a", "b", "c"], false), None, "kept when not denied");
}

#[test]
fn a_sequence_reads_every_element_and_refuses_what_is_not_an_array() {
    let read = |v: &Value| outbox_core::json::sequence(v, |x| outbox_core::json::integer::<u32>(x, "u32"));
    assert_eq!(read(&json!([1, 2, 3])), Ok(vec![1, 2, 3]));
    assert_eq!(read(&json!([])), Ok(vec![]));
    assert_eq!(read(&json!({"a": 1})), serde_json::from_value::<Vec<u32>>(json!({"a": 1})).map_err(|e| e.to_string()));
    assert_eq!(read(&json!([1, "x"])), serde_json::from_value::<Vec<u32>>(json!([1, "x"])).map_err(|e| e.to_string()));
}

#[test]
fn retry_after_ms_is_any_number_rounded_up_and_bounded() {
    use outbox_core::classify::MAX_RETRY_AFTER_MS;
    let read = |v: Value| match Outcome::from_json(&json!({"type": "transient", "retryAfterMs": v})) {
        Ok(Outcome::Transient { retry_after_ms, .. }) => Ok(retry_after_ms),
        Ok(other) => panic!("{other:?}"),
        Err(e) => Err(e),
    };
    assert_eq!(read(json!(1500)), Ok(Some(1500)));
    assert_eq!(read(json!(1500.25)), Ok(Some(1501)), "rounded up: never earlier than asked");
    assert_eq!(read(json!(0.2)), Ok(Some(1)));
    assert_eq!(read(json!(-7.5)), Ok(Some(0)), "never negative");
    assert_eq!(read(json!(1e300)), Ok(Some(MAX_RETRY_AFTER_MS)));
    assert_eq!(read(json!(u64::MAX)), Ok(Some(MAX_RETRY_AFTER_MS)));
    assert_eq!(read(json!(MAX_RETRY_AFTER_MS)), Ok(Some(MAX_RETRY_AFTER_MS)));
    assert_eq!(read(Value::Null), Ok(None));
    assert!(read(json!("30")).unwrap_err().contains("expected f64"), "a string is no number");
}

/// `quoted` writes a string as `{s:?}` does (serde's "string \"…\"" wording; the package's
/// module has no `Debug`): the same for every character below U+00A0 and for every one
/// `Debug` keeps as it is; the few others `Debug` escapes are kept as they are.
#[test]
fn quoted_strings_are_written_as_debug_writes_them() {
    for n in 0..0x3400u32 {
        let Some(c) = char::from_u32(n) else { continue };
        let s = format!("a{c}b");
        let (ours, std) = (outbox_core::json::quoted(&s), format!("{s:?}"));
        if n < 0xa0 || !std.contains("\\u{") {
            assert_eq!(ours, std, "U+{n:04X}");
        } else {
            assert_eq!(ours, format!("\"{s}\""), "U+{n:04X} kept as it is");
        }
    }
    for s in ["", "plain", "\"quoted\"", "back\\slash", "tab\there\r\n\0", "\u{1}\u{1f}\u{7f}\u{9f}", "한국어 é 🎉"]
    {
        assert_eq!(outbox_core::json::quoted(s), format!("{s:?}"), "{s:?}");
    }
}
