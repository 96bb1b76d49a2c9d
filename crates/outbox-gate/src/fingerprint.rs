//! The gate's own fingerprint of a request (it does not trust the client's). SPEC §14: the
//! same key with another request is `422 PAYLOAD_CONFLICT`, never a replay of the first
//! one's receipt — so two requests a handler could treat differently must never share a
//! fingerprint.
//!
//! SHA-256 of the canonical JSON (JCS: key order and spacing do not count) of
//! `{method, path, ifMatch, body}`, where:
//!
//! - a JSON body is read as JSON, numbers by value, except that an integer and a number
//!   written with a fraction or an exponent are two (`1` and `1.0`, `100` and `1e2`, `0` and
//!   `-0`: a handler reading an integer refuses the second), and an integer beyond 2^53 keeps
//!   its digits (JCS writes the nearest double: `9007199254740993` and `…992` were one);
//! - a body serde_json does not read as JSON (not JSON at all, nested deeper than 127, a
//!   number beyond a double, a lone surrogate, a byte-order mark), JSON naming one key twice
//!   in an object (`{"a":1,"a":2}`: a `Value` keeps the last, a derived struct refuses it),
//!   or an integer beyond 64 bits (read as the nearest double) counts by its bytes, as `raw`
//!   beside `body: null` — no JSON body can stand for it (it was `body: {"bytes": "<sha>"}`,
//!   which the JSON body of that shape matched);
//! - an empty body is `body: null`, and the JSON body `null` adds `nullBody: true`;
//! - one `If-Match` line is its text; two or more are an array of them (a handler reading
//!   the first line, as most do, tells `"1"` + `"2"` from the one line `"1", "2"`).
//!
//! Every request a browser's `JSON.stringify` body makes — no whole number of 1e21 or more,
//! one `If-Match` line at most — has the fingerprint it had before these rules, so a key in
//! flight across an upgrade of the gate keeps matching its record; the pinned vectors in
//! tests/fingerprint.rs hold that.

use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::fmt;

/// The fingerprint of a request with at most one `If-Match` line.
pub fn fingerprint(method: &str, path: &str, if_match: Option<&str>, body: &[u8]) -> String {
    fingerprint_lines(method, path, if_match.as_slice(), body)
}

/// The fingerprint of a request with these `If-Match` lines, in the order received.
pub fn fingerprint_lines(method: &str, path: &str, if_match: &[&str], body: &[u8]) -> String {
    let mut wrapper = Map::new();
    wrapper.insert("method".into(), method.into());
    wrapper.insert("path".into(), path.into());
    let if_match = match if_match {
        [] => Value::Null,
        [one] => Value::from(*one),
        lines => Value::from(lines.to_vec()),
    };
    wrapper.insert("ifMatch".into(), if_match);
    let body = if body.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice::<Strict>(body) {
            Ok(Strict(Value::Null)) => {
                wrapper.insert("nullBody".into(), true.into());
                Value::Null
            }
            Ok(Strict(v)) if !beyond_64_bits(&v) => v,
            _ => {
                wrapper.insert("raw".into(), hex(&Sha256::digest(body)).into());
                Value::Null
            }
        }
    };
    wrapper.insert("body".into(), body);
    let canon = outbox_core::fingerprint::canonical_json_exact(&Value::Object(wrapper));
    hex(&Sha256::digest(canon.as_bytes()))
}

/// Whether `v` holds a whole number of 2^63 or more that serde_json read as a double: an
/// integer literal beyond `i64`/`u64` (whose digits the double lost) or a float of that size.
fn beyond_64_bits(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64() && n.as_f64().is_some_and(|f| f.fract() == 0.0 && f.abs() >= 2f64.powi(63)),
        Value::Array(items) => items.iter().any(beyond_64_bits),
        Value::Object(map) => map.values().any(beyond_64_bits),
        _ => false,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A JSON value read with every object's keys distinct (serde_json's `Value` keeps the last
/// of two).
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(b.into())
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(n.into())
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(n.into())
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(n.into())
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(s.into())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Strict(v) = map.next_value()?;
            if object.contains_key(&key) {
                return Err(A::Error::custom("a key named twice"));
            }
            object.insert(key, v);
        }
        Ok(Value::Object(object))
    }
}
