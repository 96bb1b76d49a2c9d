//! The gate's own fingerprint of a request (it does not trust the client's). SPEC §14: the
//! same key with another request is `422 PAYLOAD_CONFLICT`, never a replay of the first
//! one's receipt — so two requests a handler could treat differently must never share a
//! fingerprint.
//!
//! SHA-256 of the canonical JSON (JCS: key order and spacing do not count) of
//! `{method, path, ifMatch, body}`, where:
//!
//! - a JSON body is read as JSON, except that an integer beyond 2^53 keeps its digits
//!   (JCS would write the nearest double: `9007199254740993` and `…992` were one request);
//! - a body that is not JSON, or JSON naming one key twice in an object (`{"a":1,"a":2}`
//!   read as `{"a":2}` by a `Value`, refused by a derived struct), counts by its bytes, as
//!   `raw` beside `body: null` — no JSON body can stand for it (it was `body:
//!   {"bytes": "<sha>"}`, which the JSON body of that shape matched);
//! - an empty body is `body: null`, and the JSON body `null` adds `nullBody: true`.
//!
//! Every other request has the fingerprint it had before these rules, so a key in flight
//! across an upgrade of the gate keeps matching its record.

use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::fmt;

/// The fingerprint of one request: `if_match` is every `If-Match` value it carries, joined
/// by `", "` (HTTP's reading of a repeated header), `None` without one.
pub fn fingerprint(method: &str, path: &str, if_match: Option<&str>, body: &[u8]) -> String {
    let mut wrapper = Map::new();
    wrapper.insert("method".into(), method.into());
    wrapper.insert("path".into(), path.into());
    wrapper.insert("ifMatch".into(), if_match.map_or(Value::Null, Value::from));
    let body = if body.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice::<Strict>(body) {
            Ok(Strict(Value::Null)) => {
                wrapper.insert("nullBody".into(), true.into());
                Value::Null
            }
            Ok(Strict(v)) => v,
            Err(_) => {
                wrapper.insert("raw".into(), hex(&Sha256::digest(body)).into());
                Value::Null
            }
        }
    };
    wrapper.insert("body".into(), body);
    let canon = outbox_core::fingerprint::canonical_json_exact(&Value::Object(wrapper));
    hex(&Sha256::digest(canon.as_bytes()))
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
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
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
