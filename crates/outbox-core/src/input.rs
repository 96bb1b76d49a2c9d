//! Validating what the app asks to enqueue (SPEC §3 rule 4): bad input is a typed error
//! and nothing is written.
//!
//! A `revision` is a JSON number or string (an ETag, `"7"`), kept opaque: stored,
//! fingerprinted (§2) and sent exactly as given. `null` or no `revision` means none; an
//! object, array or boolean is refused ([`InputError::BadRevision`]).
//!
//! `merge` is a boolean or absent (`null` is absent); `merge: false` marks a command that
//! must never be coalesced (§7, [`crate::enqueue`]); any other value is refused
//! ([`InputError::BadMerge`]).
//!
//! A `body` is any JSON value the app gives (§3), an object or not (a JSON Patch array, a
//! string, a number); only a create or update without one (missing or `null`) is refused.
//! Non-object bodies are never merged when operations coalesce ([`crate::enqueue`]).

use crate::kind::Kind;
use crate::row::{is_revision, PENDING_PREFIX};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// An operation as the app gives it to `enqueue`.
#[derive(Clone, Debug, PartialEq)]
pub struct NewOperation {
    /// Account the row belongs to.
    pub owner: String,
    /// Record key; `None` only for a create whose record has no id yet.
    pub target: Option<String>,
    /// create / update / delete.
    pub kind: Kind,
    /// Request body as the app gave it: any JSON value (`null` only for a delete without one).
    pub body: Value,
    /// Base revision, if the app uses optimistic concurrency: a number or a string.
    pub revision: Option<Value>,
    /// `merge: false` given (§7): a command whose every occurrence matters (a payment, an
    /// increment), stored as `noMerge: true` and never coalesced.
    pub no_merge: bool,
}

/// Why the app's input was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputError {
    /// The operation is not a JSON object.
    NotAnObject,
    /// `owner` is missing, not a string or empty.
    MissingOwner,
    /// `kind` is missing or not `create` / `update` / `delete`.
    UnknownKind(String),
    /// `target` is not a non-empty string, or is missing for an update or delete.
    BadTarget(String),
    /// `body` is missing or `null` for a create or an update (any other JSON value is a
    /// body, §3; how non-object bodies coalesce is in [`crate::enqueue`]).
    MissingBody,
    /// `revision` must be a number or a string when given (`null` is none).
    BadRevision,
    /// `merge` must be a boolean when given (`null` is the default, mergeable).
    BadMerge,
}

impl InputError {
    /// What is wrong, as `Display` writes it: pieced together, not formatted (no
    /// `core::fmt` in the package's module, issue 35).
    #[must_use]
    pub fn message(&self) -> String {
        match self {
            InputError::NotAnObject => "operation must be an object".into(),
            InputError::MissingOwner => "`owner` must be a non-empty string".into(),
            InputError::UnknownKind(k) => crate::text::concat(&["`kind` must be create, update or delete, got ", k]),
            InputError::BadTarget(why) => crate::text::concat(&["`target` ", why]),
            InputError::MissingBody => "`body` is required for create and update (any JSON value but null)".into(),
            InputError::BadRevision => "`revision` must be a number or a string (such as an ETag) when given".into(),
            InputError::BadMerge => "`merge` must be a boolean when given".into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for InputError {}

/// Checks an owner argument (every API call that takes one).
///
/// # Errors
/// [`InputError::MissingOwner`] when `owner` is empty.
pub fn check_owner(owner: &str) -> Result<(), InputError> {
    if owner.is_empty() {
        Err(InputError::MissingOwner)
    } else {
        Ok(())
    }
}

/// §3 rule 4: a create or an update carries a body, any JSON value but `null` (a JSON
/// Patch, a string...); a delete's is optional. Checked at `enqueue` and for the body a
/// `retryBlocked` replaces.
///
/// # Errors
/// [`InputError::MissingBody`].
pub fn check_body(kind: Kind, body: &Value) -> Result<(), InputError> {
    if kind != Kind::Delete && body.is_null() {
        return Err(InputError::MissingBody);
    }
    Ok(())
}

impl NewOperation {
    /// Reads an operation from the app's JSON.
    ///
    /// # Errors
    /// [`InputError`] naming the first field that is wrong.
    pub fn from_json(v: &Value) -> Result<NewOperation, InputError> {
        let obj = v.as_object().ok_or(InputError::NotAnObject)?;
        let owner = obj.get("owner").and_then(Value::as_str).ok_or(InputError::MissingOwner)?;
        check_owner(owner)?;
        let kind = match obj.get("kind") {
            Some(Value::String(s)) => {
                Kind::parse(s).ok_or_else(|| InputError::UnknownKind(crate::text::concat(&["`", s, "`"])))?
            }
            other => return Err(InputError::UnknownKind(other.map_or("nothing".into(), crate::text::json))),
        };
        let target = match obj.get("target") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(_) => return Err(InputError::BadTarget("must be a non-empty string".into())),
        };
        match (&target, kind) {
            (None, Kind::Update | Kind::Delete) => {
                return Err(InputError::BadTarget("is required for update and delete".into()))
            }
            (Some(t), Kind::Create) if t.starts_with(PENDING_PREFIX) => {
                return Err(InputError::BadTarget("of a create must not start with `pending:`".into()))
            }
            _ => {}
        }
        let body = obj.get("body").cloned().unwrap_or(Value::Null);
        check_body(kind, &body)?;
        let revision = match obj.get("revision") {
            None | Some(Value::Null) => None,
            Some(r) if is_revision(r) => Some(r.clone()),
            Some(_) => return Err(InputError::BadRevision),
        };
        // §7: only an explicit `false` opts out; a truthy string or a number is refused
        // rather than guessed, since guessing wrong would fold two payments into one.
        let no_merge = match obj.get("merge") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(merge)) => !merge,
            Some(_) => return Err(InputError::BadMerge),
        };
        Ok(NewOperation { owner: owner.to_owned(), target, kind, body, revision, no_merge })
    }
}

/// The target of `op` enqueued under `id`: its own, or `pending:<id>` for a create without one.
#[must_use]
pub fn target_of(op: &NewOperation, id: &str) -> String {
    op.target.clone().unwrap_or_else(|| crate::text::concat(&[PENDING_PREFIX, id]))
}

/// What `prepareSuccessor` returns: the real request of an intent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prepared {
    /// The server's record key (not `pending:`).
    pub target: String,
    /// The real request body.
    #[serde(default)]
    pub body: Value,
    /// Base revision of the real request.
    #[serde(default)]
    pub revision: Option<Value>,
}

impl Prepared {
    /// A prepared request is usable if it names a real target and its revision, if any, is
    /// a number or a string (§3); anything else would make the converted row undecodable.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        let revision_ok = self.revision.as_ref().is_none_or(|r| r.is_null() || is_revision(r));
        !self.target.is_empty() && !self.target.starts_with(PENDING_PREFIX) && revision_ok
    }
}
