//! Decoding stored rows and encoding them back (SPEC §3).
//!
//! Decoding is lenient about optional fields: a field that is absent, `null` or of a shape
//! this version cannot read stays in `extra` exactly as stored and counts as absent, so an
//! older or newer writer's data is never rewritten by accident. Besides the fields of §3
//! rule 3, four optional fields decide whether a row is decodable when present and not `null`,
//! because reading them as absent would be unsafe:
//!
//! - `revision` that is neither a number nor a string: read as absent, the row would be
//!   sent without its base revision, a blind write (§9).
//! - `claim` without a string `tabId`, a time `expiresAt` and a whole `fence` ≥ 0: read as
//!   absent, the next claim would restart the fence at 1 and an old answer could match the
//!   new claim (§6: while a row lives its fence only grows).
//! - `evidence` that is not an object, or whose `attemptCount` is not a whole number ≥ 0:
//!   read as absent, a row that was sent would look never attempted and could be merged
//!   into or cancelled (§7).
//!
//! - `noMerge` that is not a boolean: read as absent, two payments could be folded into
//!   one (§7). A stored `noMerge: false` reads as mergeable and stays stored as it is.
//!
//! Integers may be stored as floats (`fence: 2.0`, `savedAt: 1.0`, `expiresAt: 5.0e3`, as a
//! JavaScript round trip or another writer may store them): they read as the same
//! integers. A count with a fraction, a negative count, or a time outside the `i64` range
//! is not read as some nearby value.

use crate::fingerprint::fingerprint;
use crate::kind::Kind;
use crate::row::{is_revision, Claim, Evidence, Row, RowState, Writer};
use crate::time::Millis;
use serde_json::{Map, Value};
use std::fmt;

/// The top-level fields of §3 this version reads. Every other key of a stored row is an
/// unknown field, carried through every read-modify-write as stored (§3 rule 2).
pub const KNOWN_FIELDS: &[&str] = &[
    "id",
    "owner",
    "target",
    "kind",
    "body",
    "revision",
    "fingerprint",
    "savedAt",
    "state",
    "sentAt",
    "deferredAt",
    "heldAt",
    "blockedAt",
    "nextAttemptAt",
    "blockedCode",
    "overtakenAt",
    "claim",
    "evidence",
    "writer",
    "successorOf",
    "conflict",
    "noMerge",
];

/// The keys this version reads inside `claim`, `evidence` and `writer`; their other keys
/// are unknown fields too, and kept as stored.
pub const KNOWN_NESTED: &[(&str, &[&str])] = &[
    ("claim", &["tabId", "expiresAt", "fence"]),
    ("evidence", &["attemptCount", "lastAttemptAt", "lastErrorCode"]),
    ("writer", &["bundle", "at"]),
];

/// Why a stored value is not a row this version can plan for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The stored value is not a JSON object.
    NotAnObject,
    /// A required field is absent.
    MissingField(&'static str),
    /// A required field has the wrong JSON type.
    WrongType(&'static str),
    /// `kind` is a string this version does not know.
    UnknownKind(String),
    /// `state` is a string this version does not know.
    UnknownState(String),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::NotAnObject => write!(f, "row is not an object"),
            DecodeError::MissingField(k) => write!(f, "field `{k}` is missing"),
            DecodeError::WrongType(k) => write!(f, "field `{k}` has the wrong type"),
            DecodeError::UnknownKind(k) => write!(f, "unknown kind `{k}`"),
            DecodeError::UnknownState(s) => write!(f, "unknown state `{s}`"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A stored value that could not be decoded: never sent, claimed, merged or purged (§3).
#[derive(Clone, Debug, PartialEq)]
pub struct Undecodable {
    /// The key, when it can be read.
    pub id: Option<String>,
    /// The owner, when it can be read.
    pub owner: Option<String>,
    /// Why it could not be decoded.
    pub error: DecodeError,
    /// The value exactly as stored.
    pub raw: Value,
}

/// A stored value, decoded or not.
#[derive(Clone, Debug, PartialEq)]
pub enum Stored {
    /// A row this version can plan for.
    Row(Row),
    /// A value left exactly as it is.
    Undecodable(Undecodable),
}

impl Stored {
    /// Decodes a stored value; never panics, whatever the input.
    #[must_use]
    pub fn from_value(raw: &Value) -> Stored {
        match decode(raw) {
            Ok(row) => Stored::Row(row),
            Err(error) => Stored::Undecodable(Undecodable {
                id: str_field(raw, "id"),
                owner: str_field(raw, "owner"),
                error,
                raw: raw.clone(),
            }),
        }
    }

    /// The decoded row, if any.
    #[must_use]
    pub fn row(&self) -> Option<&Row> {
        match self {
            Stored::Row(r) => Some(r),
            Stored::Undecodable(_) => None,
        }
    }
}

fn str_field(raw: &Value, key: &str) -> Option<String> {
    raw.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn required_str(map: &mut Map<String, Value>, key: &'static str) -> Result<String, DecodeError> {
    match map.get(key) {
        None => Err(DecodeError::MissingField(key)),
        Some(Value::String(s)) => {
            let s = s.clone();
            map.shift_remove(key);
            Ok(s)
        }
        Some(_) => Err(DecodeError::WrongType(key)),
    }
}

/// Takes a field that must be readable when present (see the module docs): absent or
/// `null` is `None` (a stored `null` stays stored as it is); a value `read` refuses makes
/// the row undecodable.
fn strict<T>(
    map: &mut Map<String, Value>,
    key: &'static str,
    read: impl Fn(&Value) -> Option<T>,
) -> Result<Option<T>, DecodeError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let parsed = read(v).ok_or(DecodeError::WrongType(key))?;
            map.shift_remove(key);
            Ok(Some(parsed))
        }
    }
}

/// Takes an optional field out of `map` if `read` accepts it; otherwise leaves it stored.
fn optional<T>(map: &mut Map<String, Value>, key: &str, read: impl Fn(&Value) -> Option<T>) -> Option<T> {
    let parsed = map.get(key).and_then(read);
    if parsed.is_some() {
        map.shift_remove(key);
    }
    parsed
}

fn read_string(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

fn read_object(v: &Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

/// Reads a whole number ≥ 0 (a fence, an attempt count), also when stored as a float.
fn read_count(v: &Value) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return Some(n);
    }
    let f = v.as_f64()?;
    // 2^64 is exact as an f64; every whole f64 in [0, 2^64) converts without clamping.
    (f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f)).then_some(f as u64)
}

fn read_claim(v: &Value) -> Option<Claim> {
    let mut m = read_object(v)?;
    let tab_id = m.get("tabId")?.as_str()?.to_owned();
    let expires_at = Millis::from_json(m.get("expiresAt")?)?;
    let fence = read_count(m.get("fence")?)?;
    for k in ["tabId", "expiresAt", "fence"] {
        m.shift_remove(k);
    }
    Some(Claim { tab_id, expires_at, fence, extra: m })
}

fn read_evidence(v: &Value) -> Option<Evidence> {
    let mut m = read_object(v)?;
    let attempt_count = match m.get("attemptCount") {
        None => 0,
        Some(c) => read_count(c)?,
    };
    let last_attempt_at = optional(&mut m, "lastAttemptAt", Millis::from_json);
    let last_error_code = optional(&mut m, "lastErrorCode", read_string);
    m.shift_remove("attemptCount");
    Some(Evidence { attempt_count, last_attempt_at, last_error_code, extra: m })
}

fn read_writer(v: &Value) -> Option<Writer> {
    let mut m = read_object(v)?;
    let bundle = m.get("bundle")?.as_str()?.to_owned();
    let at = Millis::from_json(m.get("at")?)?;
    m.shift_remove("bundle");
    m.shift_remove("at");
    Some(Writer { bundle, at, extra: m })
}

/// `noMerge` (§7): `true` is taken out of `map`; absent, `null` or `false` read as
/// mergeable and stay stored as they are (a stored `false` survives a rewrite byte for
/// byte); anything else makes the row undecodable (see the module docs).
fn read_no_merge(map: &mut Map<String, Value>) -> Result<bool, DecodeError> {
    match map.get("noMerge") {
        None | Some(Value::Null | Value::Bool(false)) => Ok(false),
        Some(Value::Bool(true)) => {
            map.shift_remove("noMerge");
            Ok(true)
        }
        Some(_) => Err(DecodeError::WrongType("noMerge")),
    }
}

/// Decodes one stored row.
///
/// # Errors
/// [`DecodeError`] when the value misses a field §3 rule 3 requires or has one of the
/// wrong type or an unknown `kind` / `state`.
pub fn decode(raw: &Value) -> Result<Row, DecodeError> {
    let mut map = raw.as_object().cloned().ok_or(DecodeError::NotAnObject)?;
    let id = required_str(&mut map, "id")?;
    let owner = required_str(&mut map, "owner")?;
    let target = required_str(&mut map, "target")?;
    let kind_s = required_str(&mut map, "kind")?;
    let kind = Kind::parse(&kind_s).ok_or(DecodeError::UnknownKind(kind_s))?;
    let state_s = required_str(&mut map, "state")?;
    let state = RowState::parse(&state_s).ok_or(DecodeError::UnknownState(state_s))?;
    let saved_at = match map.get("savedAt") {
        None => return Err(DecodeError::MissingField("savedAt")),
        Some(v) => Millis::from_json(v).ok_or(DecodeError::WrongType("savedAt"))?,
    };
    map.shift_remove("savedAt");
    let body = map.shift_remove("body").ok_or(DecodeError::MissingField("body"))?;
    let revision = strict(&mut map, "revision", |v| is_revision(v).then(|| v.clone()))?;
    let claim = strict(&mut map, "claim", read_claim)?;
    let evidence = strict(&mut map, "evidence", read_evidence)?;
    let no_merge = read_no_merge(&mut map)?;
    let stored_fingerprint = optional(&mut map, "fingerprint", read_string);
    let fingerprint =
        stored_fingerprint.unwrap_or_else(|| crate::fingerprint::fingerprint(kind, &target, &body, revision.as_ref()));
    Ok(Row {
        sent_at: optional(&mut map, "sentAt", Millis::from_json),
        deferred_at: optional(&mut map, "deferredAt", Millis::from_json),
        held_at: optional(&mut map, "heldAt", Millis::from_json),
        blocked_at: optional(&mut map, "blockedAt", Millis::from_json),
        next_attempt_at: optional(&mut map, "nextAttemptAt", Millis::from_json),
        blocked_code: optional(&mut map, "blockedCode", read_string),
        overtaken_at: optional(&mut map, "overtakenAt", Millis::from_json),
        claim,
        evidence,
        writer: optional(&mut map, "writer", read_writer),
        successor_of: optional(&mut map, "successorOf", read_string),
        conflict: optional(&mut map, "conflict", |v| v.is_object().then(|| v.clone())),
        no_merge,
        id,
        owner,
        target,
        kind,
        body,
        revision,
        fingerprint,
        saved_at,
        state,
        extra: map,
    })
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        map.insert(key.to_owned(), v);
    }
}

fn with_extra(known: Map<String, Value>, extra: &Map<String, Value>) -> Value {
    let mut out = known;
    for (k, v) in extra {
        out.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Value::Object(out)
}

fn encode_claim(c: &Claim) -> Value {
    let mut m = Map::new();
    m.insert("tabId".into(), Value::from(c.tab_id.clone()));
    m.insert("expiresAt".into(), c.expires_at.to_json());
    m.insert("fence".into(), Value::from(c.fence));
    with_extra(m, &c.extra)
}

fn encode_evidence(e: &Evidence) -> Value {
    let mut m = Map::new();
    m.insert("attemptCount".into(), Value::from(e.attempt_count));
    put(&mut m, "lastAttemptAt", e.last_attempt_at.map(Millis::to_json));
    put(&mut m, "lastErrorCode", e.last_error_code.clone().map(Value::from));
    with_extra(m, &e.extra)
}

fn encode_writer(w: &Writer) -> Value {
    let mut m = Map::new();
    m.insert("bundle".into(), Value::from(w.bundle.clone()));
    m.insert("at".into(), w.at.to_json());
    with_extra(m, &w.extra)
}

/// Encodes a row for storage: the known fields, then every unknown field as it was read.
#[must_use]
pub fn encode(row: &Row) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), Value::from(row.id.clone()));
    m.insert("owner".into(), Value::from(row.owner.clone()));
    m.insert("target".into(), Value::from(row.target.clone()));
    m.insert("kind".into(), Value::from(row.kind.as_str()));
    m.insert("body".into(), row.body.clone());
    put(&mut m, "revision", row.revision.clone());
    m.insert("fingerprint".into(), Value::from(row.fingerprint.clone()));
    m.insert("savedAt".into(), row.saved_at.to_json());
    m.insert("state".into(), Value::from(row.state.as_str()));
    put(&mut m, "sentAt", row.sent_at.map(Millis::to_json));
    put(&mut m, "deferredAt", row.deferred_at.map(Millis::to_json));
    put(&mut m, "heldAt", row.held_at.map(Millis::to_json));
    put(&mut m, "blockedAt", row.blocked_at.map(Millis::to_json));
    put(&mut m, "nextAttemptAt", row.next_attempt_at.map(Millis::to_json));
    put(&mut m, "blockedCode", row.blocked_code.clone().map(Value::from));
    put(&mut m, "overtakenAt", row.overtaken_at.map(Millis::to_json));
    put(&mut m, "claim", row.claim.as_ref().map(encode_claim));
    put(&mut m, "evidence", row.evidence.as_ref().map(encode_evidence));
    put(&mut m, "writer", row.writer.as_ref().map(encode_writer));
    put(&mut m, "successorOf", row.successor_of.clone().map(Value::from));
    put(&mut m, "conflict", row.conflict.clone());
    // Absent means mergeable (§3), so only `true` is written.
    put(&mut m, "noMerge", row.no_merge.then_some(Value::Bool(true)));
    with_extra(m, &row.extra)
}

/// Recomputes a row's fingerprint after its request fields changed.
pub fn refingerprint(row: &mut Row) {
    row.fingerprint = fingerprint(row.kind, &row.target, &row.body, row.revision.as_ref());
}
