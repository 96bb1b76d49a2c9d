//! The markers standing for values JSON cannot hold (stored ones) in the JSON the planner
//! sees: `{"$outboxOpaque": "Date:1700000000000"}`, a stable digest equal for two reads of
//! one stored value, so that the value can be put back where it was ([`super::kept`]).
//! walk.js names and digests the values; it writes the same marker objects.

use serde_json::{Map, Value};

/// The key of the marker standing for a value JSON cannot hold (a stored one) in the JSON
/// the planner sees. Reserved: the app may not use it (it would read back as a marker).
pub const OPAQUE_KEY: &str = "$outboxOpaque";

/// The marker standing for a kept value in the JSON.
pub fn marker(m: &str) -> Value {
    let mut map = Map::new();
    map.insert(OPAQUE_KEY.into(), Value::String(m.to_owned()));
    Value::Object(map)
}

/// The marker string, if `v` is a marker.
#[must_use]
pub fn as_marker(v: &Value) -> Option<&str> {
    match v.as_object() {
        Some(m) if m.len() == 1 => m.get(OPAQUE_KEY).and_then(Value::as_str),
        _ => None,
    }
}
