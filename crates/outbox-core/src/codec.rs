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

impl DecodeError {
    /// What is wrong, as `Display` writes it: pieced together, not formatted (no
    /// `core::fmt` in the package's module, issue 35).
    #[must_use]
    pub fn message(&self) -> String {
        match self {
            DecodeError::NotAnObject => "row is not an object".into(),
            DecodeError::MissingField(k) => crate::text::concat(&["field `", k, "` is missing"]),
            DecodeError::WrongType(k) => crate::text::concat(&["field `", k, "` has the wrong type"]),
            DecodeError::UnknownKind(k) => crate::text::concat(&["unknown kind `", k, "`"]),
            DecodeError::UnknownState(s) => crate::text::concat(&["unknown state `", s, "`"]),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
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

/// The fields of one stored object as they are read. A field read is taken; every other
/// entry stays, in its stored order, in the `extra` of what was read (§3 rule 2). Typed
/// readers, not one generic `take<T>`: each generic copy was inlined into `decode`, the
/// largest function of the planner in the wasm module (issue 35).
struct Fields<'a> {
    map: &'a Map<String, Value>,
    taken: Vec<&'static str>,
}

impl<'a> Fields<'a> {
    fn new(map: &'a Map<String, Value>) -> Fields<'a> {
        Fields { map, taken: Vec::new() }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    fn take(&mut self, key: &'static str) {
        self.taken.push(key);
    }

    /// A field that must be present: what `get` finds, else [`DecodeError::MissingField`].
    fn required(&self, key: &'static str) -> Result<&'a Value, DecodeError> {
        self.get(key).ok_or(DecodeError::MissingField(key))
    }

    /// A required string field, borrowed: nothing is allocated before the row is known to
    /// decode (each early return would drop what was).
    fn required_str(&mut self, key: &'static str) -> Result<&'a str, DecodeError> {
        let s = self.required(key)?.as_str().ok_or(DecodeError::WrongType(key))?;
        self.take(key);
        Ok(s)
    }

    /// A field that must be readable when present (see the module docs): absent or `null`
    /// is `None` (a stored `null` stays stored as it is); a value `read` refuses is
    /// [`DecodeError::WrongType`].
    fn strict<T>(&mut self, key: &'static str, read: fn(&Value) -> Option<T>) -> Result<Option<T>, DecodeError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                let parsed = read(v).ok_or(DecodeError::WrongType(key))?;
                self.take(key);
                Ok(Some(parsed))
            }
        }
    }

    /// An optional string field; any other value stays stored.
    fn string(&mut self, key: &'static str) -> Option<String> {
        let s = self.get(key)?.as_str()?.to_owned();
        self.take(key);
        Some(s)
    }

    /// An optional time field; any other value stays stored.
    fn millis(&mut self, key: &'static str) -> Option<Millis> {
        let m = Millis::from_json(self.get(key)?)?;
        self.take(key);
        Some(m)
    }

    /// Every entry not taken, in stored order.
    fn extra(&self) -> Map<String, Value> {
        let mut extra = Map::new();
        for (k, v) in self.map {
            if !self.taken.contains(&k.as_str()) {
                extra.insert(k.clone(), v.clone());
            }
        }
        extra
    }
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
    let mut m = Fields::new(v.as_object()?);
    let tab_id = m.string("tabId")?;
    let expires_at = m.millis("expiresAt")?;
    let fence = read_count(m.get("fence")?)?;
    m.take("fence");
    Some(Claim { tab_id, expires_at, fence, extra: m.extra() })
}

fn read_evidence(v: &Value) -> Option<Evidence> {
    let mut m = Fields::new(v.as_object()?);
    let attempt_count = match m.get("attemptCount") {
        None => 0,
        Some(c) => read_count(c)?,
    };
    m.take("attemptCount");
    let last_attempt_at = m.millis("lastAttemptAt");
    let last_error_code = m.string("lastErrorCode");
    Some(Evidence { attempt_count, last_attempt_at, last_error_code, extra: m.extra() })
}

fn read_writer(v: &Value) -> Option<Writer> {
    let mut m = Fields::new(v.as_object()?);
    let bundle = m.string("bundle")?;
    let at = m.millis("at")?;
    Some(Writer { bundle, at, extra: m.extra() })
}

fn read_revision(v: &Value) -> Option<Value> {
    is_revision(v).then(|| v.clone())
}

/// `noMerge` (§7): `true` is taken; absent, `null` or `false` read as mergeable and stay
/// stored as they are (a stored `false` survives a rewrite byte for byte); anything else
/// makes the row undecodable (see the module docs).
fn read_no_merge(m: &mut Fields<'_>) -> Result<bool, DecodeError> {
    match m.get("noMerge") {
        None | Some(Value::Null | Value::Bool(false)) => Ok(false),
        Some(Value::Bool(true)) => {
            m.take("noMerge");
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
    let mut m = Fields::new(raw.as_object().ok_or(DecodeError::NotAnObject)?);
    let id = m.required_str("id")?;
    let owner = m.required_str("owner")?;
    let target = m.required_str("target")?;
    let kind_s = m.required_str("kind")?;
    let kind = Kind::parse(kind_s).ok_or_else(|| DecodeError::UnknownKind(kind_s.to_owned()))?;
    let state_s = m.required_str("state")?;
    let state = RowState::parse(state_s).ok_or_else(|| DecodeError::UnknownState(state_s.to_owned()))?;
    let saved_at = Millis::from_json(m.required("savedAt")?).ok_or(DecodeError::WrongType("savedAt"))?;
    m.take("savedAt");
    let body = m.required("body")?.clone();
    m.take("body");
    let revision = m.strict("revision", read_revision)?;
    let claim = m.strict("claim", read_claim)?;
    let evidence = m.strict("evidence", read_evidence)?;
    let no_merge = read_no_merge(&mut m)?;
    let fingerprint = m
        .string("fingerprint")
        .unwrap_or_else(|| crate::fingerprint::fingerprint(kind, target, &body, revision.as_ref()));
    let conflict = m.get("conflict").filter(|v| v.is_object()).cloned();
    if conflict.is_some() {
        m.take("conflict");
    }
    let writer = m.get("writer").and_then(read_writer);
    if writer.is_some() {
        m.take("writer");
    }
    Ok(Row {
        sent_at: m.millis("sentAt"),
        deferred_at: m.millis("deferredAt"),
        held_at: m.millis("heldAt"),
        blocked_at: m.millis("blockedAt"),
        next_attempt_at: m.millis("nextAttemptAt"),
        blocked_code: m.string("blockedCode"),
        overtaken_at: m.millis("overtakenAt"),
        claim,
        evidence,
        writer,
        successor_of: m.string("successorOf"),
        conflict,
        no_merge,
        extra: m.extra(),
        id: id.to_owned(),
        owner: owner.to_owned(),
        target: target.to_owned(),
        kind,
        body,
        revision,
        fingerprint,
        saved_at,
        state,
    })
}

/// An object of `known` fields (those with a value, in this order), then every entry of
/// `extra` whose key is not among them, as it was read. One loop over a table rather than
/// one map insert per field: the inserts were each inlined into `encode` (issue 35).
fn object(known: &mut [(&str, Option<Value>)], extra: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    for (k, v) in known.iter_mut() {
        if let Some(v) = v.take() {
            out.insert((*k).to_owned(), v);
        }
    }
    for (k, v) in extra {
        if !out.contains_key(k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}

fn string(s: &str) -> Option<Value> {
    Some(Value::String(s.to_owned()))
}

fn millis(m: Option<Millis>) -> Option<Value> {
    m.map(Millis::to_json)
}

fn encode_claim(c: &Claim) -> Value {
    let mut known = [
        ("tabId", string(&c.tab_id)),
        ("expiresAt", Some(c.expires_at.to_json())),
        ("fence", Some(Value::from(c.fence))),
    ];
    object(&mut known, &c.extra)
}

fn encode_evidence(e: &Evidence) -> Value {
    let mut known = [
        ("attemptCount", Some(Value::from(e.attempt_count))),
        ("lastAttemptAt", millis(e.last_attempt_at)),
        ("lastErrorCode", e.last_error_code.as_deref().and_then(string)),
    ];
    object(&mut known, &e.extra)
}

fn encode_writer(w: &Writer) -> Value {
    let mut known = [("bundle", string(&w.bundle)), ("at", Some(w.at.to_json()))];
    object(&mut known, &w.extra)
}

/// Encodes a row for storage: the known fields, then every unknown field as it was read.
#[must_use]
pub fn encode(row: &Row) -> Value {
    let mut known = [
        ("id", string(&row.id)),
        ("owner", string(&row.owner)),
        ("target", string(&row.target)),
        ("kind", string(row.kind.as_str())),
        ("body", Some(row.body.clone())),
        ("revision", row.revision.clone()),
        ("fingerprint", string(&row.fingerprint)),
        ("savedAt", Some(row.saved_at.to_json())),
        ("state", string(row.state.as_str())),
        ("sentAt", millis(row.sent_at)),
        ("deferredAt", millis(row.deferred_at)),
        ("heldAt", millis(row.held_at)),
        ("blockedAt", millis(row.blocked_at)),
        ("nextAttemptAt", millis(row.next_attempt_at)),
        ("blockedCode", row.blocked_code.as_deref().and_then(string)),
        ("overtakenAt", millis(row.overtaken_at)),
        ("claim", row.claim.as_ref().map(encode_claim)),
        ("evidence", row.evidence.as_ref().map(encode_evidence)),
        ("writer", row.writer.as_ref().map(encode_writer)),
        ("successorOf", row.successor_of.as_deref().and_then(string)),
        ("conflict", row.conflict.clone()),
        // Absent means mergeable (§3), so only `true` is written.
        ("noMerge", row.no_merge.then_some(Value::Bool(true))),
    ];
    object(&mut known, &row.extra)
}

/// Recomputes a row's fingerprint after its request fields changed.
pub fn refingerprint(row: &mut Row) {
    row.fingerprint = fingerprint(row.kind, &row.target, &row.body, row.revision.as_ref());
}
