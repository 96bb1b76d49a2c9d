//! Reading JSON arguments ([`Outcome`], [`Ticket`], [`Prepared`], and the binding's own
//! declarations) by hand, exactly as `serde_json::from_value` reads them through the serde
//! derives of these types — same results, same error messages — without serde's generic
//! deserializer code, which was a fifth of the wasm module (issue 12). The derives stay (the
//! gate and tests use them); `tests/json.rs` checks both readers agree on random values.

use crate::input::Prepared;
use crate::outcome::retry_after_from_number;
use crate::outcome::Outcome;
use crate::row::Ticket;
use serde_json::Value;

/// A reading error: serde's message, e.g. "missing field `code`".
pub type Error = String;

/// How serde names a JSON value in "invalid type" errors (`serde_json`'s wording).
#[must_use]
pub fn unexpected(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => crate::text::concat(&["boolean `", crate::text::boolean(*b), "`"]),
        // The digits through serde_json's writer of a `Value`, which the module holds anyway,
        // not the number's `Display` (issue 35): the same digits.
        Value::Number(n) => {
            let what = if n.is_f64() { "floating point" } else { "integer" };
            crate::text::concat(&[what, " `", &text(v), "`"])
        }
        Value::String(s) => crate::text::concat(&["string ", &quoted(s)]),
        Value::Array(_) => "sequence".into(),
        Value::Object(_) => "map".into(),
    }
}

pub use crate::text::json as text;

/// `s` quoted as Rust's `{s:?}` writes it (serde's wording), without `Debug`: the package's
/// module is built with `-Z fmt-debug=none` (issue 35), where `{s:?}` writes nothing.
/// Quotes, backslashes and control characters are escaped as `Debug` escapes them; the
/// other characters `Debug` would escape (unassigned or invisible ones, such as U+200B)
/// are kept as they are, which the unicode tables that tell them apart would cost.
#[must_use]
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if c < ' ' || ('\u{7f}'..='\u{9f}').contains(&c) => {
                out.push_str("\\u{");
                let n = c as u32;
                if n >= 16 {
                    out.push(hex_digit(n >> 4));
                }
                out.push(hex_digit(n & 15));
                out.push('}');
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn hex_digit(n: u32) -> char {
    char::from_digit(n, 16).unwrap_or('0')
}

/// "invalid type: …, expected {expected}".
#[must_use]
pub fn invalid_type(v: &Value, expected: &str) -> Error {
    crate::text::concat(&["invalid type: ", &unexpected(v), ", expected ", expected])
}

/// "missing field `{name}`".
#[must_use]
pub fn missing(name: &str) -> Error {
    crate::text::concat(&["missing field `", name, "`"])
}

/// A string.
///
/// # Errors
/// Any other value.
pub fn string(v: &Value) -> Result<String, Error> {
    v.as_str().map(str::to_owned).ok_or_else(|| invalid_type(v, "a string"))
}

/// A boolean.
///
/// # Errors
/// Any other value.
pub fn boolean(v: &Value) -> Result<bool, Error> {
    v.as_bool().ok_or_else(|| invalid_type(v, "a boolean"))
}

/// An integer that fits `T` (`name` is how serde names it: `u32`, `u64`, `i64`).
///
/// # Errors
/// A float, a non-number, or an integer out of range.
pub fn integer<T: TryFrom<i128>>(v: &Value, name: &str) -> Result<T, Error> {
    T::try_from(any_integer(v, name)?)
        .map_err(|_| crate::text::concat(&["invalid value: ", &unexpected(v), ", expected ", name]))
}

/// The integer of [`integer`] before its range is checked: one copy of the reading for
/// every `T` (each generic copy was a few hundred bytes of the wasm module, issue 35).
fn any_integer(v: &Value, name: &str) -> Result<i128, Error> {
    let n = match v {
        // A float is neither (serde_json's `as_i64`/`as_u64` are `None` for it, even for 1.0).
        Value::Number(n) => n.as_i64().map(i128::from).or(n.as_u64().map(i128::from)),
        _ => None,
    };
    n.ok_or_else(|| invalid_type(v, name))
}

/// `None` for `null`, else what `read` makes of the value (serde's `Option<T>`).
///
/// # Errors
/// What `read` says.
pub fn optional<T>(v: &Value, read: impl FnOnce(&Value) -> Result<T, Error>) -> Result<Option<T>, Error> {
    if v.is_null() {
        Ok(None)
    } else {
        read(v).map(Some)
    }
}

/// The fields of a struct as serde's derive reads them from JSON: an object's entries in
/// order (keys not in `fields` ignored, or refused when `deny_unknown`), or an array's
/// elements by position. `field(i, value)` reads field `i`; `defaulted[i]` (one per name)
/// says whether field `i` may be absent from an array (`#[serde(default)]`, `Option`). `expecting` is
/// serde's name of the type (`struct AppStore`). Absent fields of an object are for the
/// caller to check, after this returns.
///
/// # Errors
/// The first error in the order serde meets it.
pub fn fields(
    v: &Value,
    expecting: &str,
    names: &[&str],
    defaulted: &[bool],
    deny_unknown: bool,
    mut field: impl FnMut(usize, &Value) -> Result<(), Error>,
) -> Result<(), Error> {
    walk_fields(v, expecting, names, defaulted, deny_unknown, &mut field)
}

/// [`fields`] with its reader behind a reference: one copy of the walk for every type read
/// (a generic copy per reader was 5.7 KB of the wasm module, issue 35).
fn walk_fields(
    v: &Value,
    expecting: &str,
    names: &[&str],
    defaulted: &[bool],
    deny_unknown: bool,
    field: &mut dyn FnMut(usize, &Value) -> Result<(), Error>,
) -> Result<(), Error> {
    match v {
        Value::Object(map) => {
            for (k, item) in map {
                match names.iter().position(|n| n == k) {
                    Some(i) => field(i, item)?,
                    None if deny_unknown => return Err(unknown_field(k, names)),
                    None => {}
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, &may_lack) in defaulted.iter().enumerate() {
                match items.get(i) {
                    Some(item) => field(i, item)?,
                    None if may_lack => {}
                    None => {
                        let s = if names.len() == 1 { "" } else { "s" };
                        let mut e = String::from("invalid length ");
                        crate::text::push_decimal(&mut e, i);
                        e.push_str(", expected ");
                        e.push_str(expecting);
                        e.push_str(" with ");
                        crate::text::push_decimal(&mut e, names.len());
                        e.push_str(" element");
                        e.push_str(s);
                        return Err(e);
                    }
                }
            }
            if items.len() > names.len() {
                let mut e = String::from("invalid length ");
                crate::text::push_decimal(&mut e, items.len());
                e.push_str(", expected fewer elements in array");
                return Err(e);
            }
            Ok(())
        }
        other => Err(invalid_type(other, expecting)),
    }
}

/// serde's list of the expected names (never empty here: `unknown_field` says so first).
fn one_of(names: &[&str]) -> String {
    // `a`, `a` or `b`, one of `a`, `b`, `c`: written out, not a format! per name and a join.
    let (mut s, sep) = match names.len() {
        1 | 2 => (String::new(), " or "),
        _ => (String::from("one of "), ", "),
    };
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            s.push_str(sep);
        }
        s.push('`');
        s.push_str(n);
        s.push('`');
    }
    s
}

fn unknown_field(k: &str, names: &[&str]) -> Error {
    if names.is_empty() {
        crate::text::concat(&["unknown field `", k, "`, there are no fields"])
    } else {
        crate::text::concat(&["unknown field `", k, "`, expected ", &one_of(names)])
    }
}

/// An array, each element read by `read` (serde's `Vec<T>`).
///
/// # Errors
/// Not an array, or the first element `read` refuses.
pub fn sequence<T>(v: &Value, read: impl Fn(&Value) -> Result<T, Error>) -> Result<Vec<T>, Error> {
    let items = v.as_array().ok_or_else(|| invalid_type(v, "a sequence"))?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(read(item)?);
    }
    Ok(out)
}

const OUTCOME_TYPES: &[&str] = &["success", "transient", "auth", "permanent", "conflict"];

impl Outcome {
    /// Reads an outcome object as `serde_json::from_value` does (`{type: "success", …}`).
    /// serde would also read one from an array (the tag first); the binding only ever has
    /// objects here (`fields_from_js`), and this refuses arrays as serde refuses strings.
    ///
    /// # Errors
    /// serde's message for what is wrong.
    pub fn from_json(v: &Value) -> Result<Outcome, Error> {
        // The tag first, as serde reads it; the variant's fields are then read from the same
        // object, where `type` is one more key no variant has (ignored, as serde ignores it).
        let tag = match v {
            Value::Object(map) => {
                let item = map.get("type").ok_or_else(|| missing("type"))?;
                let name = item.as_str().ok_or_else(|| invalid_type(item, "variant identifier"))?;
                let known = OUTCOME_TYPES.iter().position(|t| *t == name);
                known.ok_or_else(|| {
                    crate::text::concat(&["unknown variant `", name, "`, expected ", &one_of(OUTCOME_TYPES)])
                })?
            }
            other => return Err(invalid_type(other, "internally tagged enum Outcome")),
        };
        // The fields of every variant are read by one closure, by tag and place: one reader
        // in the wasm module, not one per variant (issue 35). `value` is a success's
        // `receipt` or a conflict's `actualRevision`.
        let (mut value, mut replayed, mut code, mut retry_after_ms) = (None, false, None, None);
        if let Some((expecting, names, defaulted)) = OUTCOME_FIELDS[tag] {
            variant(v, expecting, names, defaulted, &mut |i, f| {
                match (tag, i) {
                    (0, 1) => replayed = boolean(f)?,
                    (1, 0) => code = optional(f, string)?,
                    (1, _) => {
                        retry_after_ms = optional(f, |f| {
                            f.as_f64().map(retry_after_from_number).ok_or_else(|| invalid_type(f, "f64"))
                        })?;
                    }
                    (3, _) => code = Some(string(f)?),
                    _ => value = Some(f.clone()),
                }
                Ok(())
            })?;
        }
        Ok(match tag {
            0 => Outcome::Success { receipt: value.unwrap_or_default(), replayed },
            1 => Outcome::Transient { code, retry_after_ms },
            2 => Outcome::Auth,
            3 => Outcome::Permanent { code: code.ok_or_else(|| missing("code"))? },
            _ => Outcome::Conflict { actual_revision: value.ok_or_else(|| missing("actualRevision"))? },
        })
    }
}

/// Each variant's fields, by tag (the order of [`OUTCOME_TYPES`]): serde's name of the
/// variant, the fields' names, and whether each may be absent. `auth` has none.
type VariantFields = Option<(&'static str, &'static [&'static str], &'static [bool])>;
const OUTCOME_FIELDS: [VariantFields; 5] = [
    Some(("struct variant Outcome::Success", &["receipt", "replayed"], &[true, true])),
    Some(("struct variant Outcome::Transient", &["code", "retryAfterMs"], &[true, true])),
    None,
    Some(("struct variant Outcome::Permanent", &["code"], &[false])),
    Some(("struct variant Outcome::Conflict", &["actualRevision"], &[false])),
];

/// The fields of a struct variant after its tag.
fn variant(
    rest: &Value,
    expecting: &str,
    names: &[&str],
    defaulted: &[bool],
    field: &mut dyn FnMut(usize, &Value) -> Result<(), Error>,
) -> Result<(), Error> {
    walk_fields(rest, expecting, names, defaulted, false, field)
}

impl Ticket {
    /// Reads a ticket (`{tabId, fence}`) as `serde_json::from_value` does.
    ///
    /// # Errors
    /// serde's message for what is wrong.
    pub fn from_json(v: &Value) -> Result<Ticket, Error> {
        let (mut tab_id, mut fence) = (None, None);
        fields(v, "struct Ticket", &["tabId", "fence"], &[false, false], false, |i, f| {
            match i {
                0 => tab_id = Some(string(f)?),
                _ => fence = Some(integer(f, "u64")?),
            }
            Ok(())
        })?;
        Ok(Ticket { tab_id: tab_id.ok_or_else(|| missing("tabId"))?, fence: fence.ok_or_else(|| missing("fence"))? })
    }
}

impl Prepared {
    /// Reads what `prepareSuccessor` returned (`{target, body?, revision?}`) as
    /// `serde_json::from_value` does.
    ///
    /// # Errors
    /// serde's message for what is wrong.
    pub fn from_json(v: &Value) -> Result<Prepared, Error> {
        let (mut target, mut body, mut revision) = (None, Value::Null, None);
        fields(v, "struct Prepared", &["target", "body", "revision"], &[false, true, true], false, |i, f| {
            match i {
                0 => target = Some(string(f)?),
                1 => body = f.clone(),
                _ => revision = optional(f, |f| Ok(f.clone()))?,
            }
            Ok(())
        })?;
        Ok(Prepared { target: target.ok_or_else(|| missing("target"))?, body, revision })
    }
}
