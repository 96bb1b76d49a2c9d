//! The default HTTP classifier (SPEC §10): status, headers and body into an [`Outcome`].
//!
//! A `412 REVISION_CONFLICT` whose `actualRevision` is missing or not a number or string is
//! classified permanent `REVISION_UNKNOWN` (see [`crate::conflict`]): a conflict successor
//! needs the server's revision.

use crate::outcome::Outcome;
pub use crate::outcome::{retry_after_from_number, MAX_RETRY_AFTER_MS};
use crate::outcome::{usable_actual_revision, REVISION_UNKNOWN};
use crate::time::Millis;
use serde_json::Value;

/// Classifies one HTTP answer. `headers` are `(name, value)` pairs, names matched without
/// case; `status` 0 means the request never got an answer (network error).
#[must_use]
pub fn classify_http(status: u16, headers: &[(String, String)], body: &Value, now: Millis) -> Outcome {
    let code = body.get("code").and_then(Value::as_str);
    let retry_after_ms = header(headers, "retry-after").and_then(|v| parse_retry_after(v, now));
    let transient = |code: String| Outcome::Transient { code: Some(code), retry_after_ms };
    let permanent = |code: &str| Outcome::Permanent { code: code.to_owned() };
    match status {
        200..=299 => Outcome::Success {
            receipt: body.clone(),
            replayed: header(headers, "idempotent-replayed").is_some_and(|v| v.eq_ignore_ascii_case("true")),
        },
        0 => transient("NETWORK".into()),
        408 => transient("TIMEOUT".into()),
        429 => transient("RATE_LIMITED".into()),
        409 if code == Some("IN_PROGRESS") => transient("IN_PROGRESS".into()),
        412 if code == Some("REVISION_CONFLICT") => match body.get("actualRevision") {
            Some(actual) if usable_actual_revision(actual) => Outcome::Conflict { actual_revision: actual.clone() },
            // §9 without R: quarantined, never resent without a base revision.
            _ => permanent(REVISION_UNKNOWN),
        },
        422 if code == Some("PAYLOAD_CONFLICT") => permanent("PAYLOAD_CONFLICT"),
        401 => Outcome::Auth,
        403 => permanent("FORBIDDEN"),
        400 | 422 => permanent("INVALID"),
        404 => permanent("NOT_FOUND"),
        410 => permanent("GONE"),
        400..=499 => permanent(&http_code(status)),
        _ => transient(http_code(status)),
    }
}

/// `HTTP_<status>`: the code of a status without one of its own.
fn http_code(status: u16) -> String {
    let mut code = String::from("HTTP_");
    crate::text::push_decimal(&mut code, usize::from(status));
    code
}

/// The first header called `name` (without case), trimmed. A function, not a closure: the
/// closure was inlined at each of its two calls.
fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
}

/// Reads `Retry-After` as delay-seconds or as an HTTP date; the result is ms from `now`
/// (never negative, at most [`MAX_RETRY_AFTER_MS`]). Unreadable values give `None`.
#[must_use]
pub fn parse_retry_after(value: &str, now: Millis) -> Option<i64> {
    let v = value.trim();
    let ms = match digits(v.as_bytes()) {
        Some(seconds) => seconds.saturating_mul(1000),
        None => parse_http_date(v)?.since(now).max(0),
    };
    Some(ms.min(MAX_RETRY_AFTER_MS))
}

/// A run of ASCII digits as a number, `i64::MAX` past it (a byte loop: smaller in the wasm
/// module than `str::parse`); `None` when empty or when a byte is not a digit.
fn digits(t: &[u8]) -> Option<i64> {
    if t.is_empty() {
        return None;
    }
    let mut n: i64 = 0;
    for &b in t {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    Some(n)
}

const MONTHS: &[u8; 36] = b"janfebmaraprmayjunjulaugsepoctnovdec";

/// Parses the three HTTP-date forms (IMF-fixdate, RFC 850, asctime), always GMT.
///
/// Tokens split at spaces, commas and dashes: a month name (any case), one clock `h:m:s`
/// (each field digits with an optional `+`), and exactly two runs of digits, day then year
/// (two or four digits); any other token is ignored, the last month or clock wins. A
/// byte scanner without allocation (the module's size). A number too large for `i64` counts
/// as `i64::MAX`: as a field, day or year it is out of range either way.
#[must_use]
pub fn parse_http_date(s: &str) -> Option<Millis> {
    let mut month = None;
    let mut numbers = [(0, 0); 2];
    let mut count = 0;
    let mut clock = None;
    for t in s.as_bytes().split(|b| matches!(b, b' ' | b',' | b'-')) {
        if t.is_empty() {
            continue;
        }
        if let Some(m) = MONTHS.chunks(3).position(|m| t.eq_ignore_ascii_case(m)) {
            month = Some(m as i64 + 1);
        } else if t.contains(&b':') {
            let mut parts = [0; 3];
            let mut n = 0;
            for p in t.split(|b| *b == b':') {
                let value = digits(p.strip_prefix(b"+").unwrap_or(p))?;
                *parts.get_mut(n)? = value;
                n += 1;
            }
            if n != 3 || parts[0] > 23 || parts[1] > 59 || parts[2] > 60 {
                return None;
            }
            clock = Some(parts[0] * 3600 + parts[1] * 60 + parts[2]);
        } else if let Some(n) = digits(t) {
            *numbers.get_mut(count)? = (t.len(), n);
            count += 1;
        }
    }
    let (month, secs) = (month?, clock?);
    if count != 2 {
        return None;
    }
    let (day, (ylen, y)) = (numbers[0].1, numbers[1]);
    let year = match ylen {
        2 if y < 70 => 2000 + y,
        2 => 1900 + y,
        4 => y,
        _ => return None,
    };
    if !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(Millis((days * 86_400 + secs) * 1000))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Outcome::*;
    use serde_json::json;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn perm(code: &str) -> Outcome {
        Permanent { code: code.into() }
    }

    #[test]
    fn s10_table_statuses_map_to_their_classes() {
        let now = Millis(0);
        let none = h(&[]);
        let c = |s, b: Value| classify_http(s, &none, &b, now);
        assert_eq!(c(201, json!({"serverId": 7})), Success { receipt: json!({"serverId": 7}), replayed: false });
        assert_eq!(c(0, json!(null)), Outcome::transient("NETWORK"));
        assert_eq!(c(408, json!(null)), Outcome::transient("TIMEOUT"));
        assert_eq!(c(429, json!(null)), Outcome::transient("RATE_LIMITED"));
        assert_eq!(c(503, json!(null)), Outcome::transient("HTTP_503"));
        assert_eq!(c(500, json!(null)), Outcome::transient("HTTP_500"));
        assert_eq!(c(301, json!(null)), Outcome::transient("HTTP_301"));
        assert_eq!(c(401, json!(null)), Auth);
        assert_eq!(c(403, json!(null)), perm("FORBIDDEN"));
        assert_eq!(c(400, json!(null)), perm("INVALID"));
        assert_eq!(c(422, json!({"code": "TOO_HEAVY"})), perm("INVALID"));
        assert_eq!(c(422, json!({"code": "PAYLOAD_CONFLICT"})), perm("PAYLOAD_CONFLICT"));
        assert_eq!(c(409, json!({"code": "IN_PROGRESS"})), Outcome::transient("IN_PROGRESS"));
        assert_eq!(c(409, json!({})), perm("HTTP_409"));
        assert_eq!(
            c(412, json!({"code": "REVISION_CONFLICT", "actualRevision": 9})),
            Conflict { actual_revision: json!(9) }
        );
        assert_eq!(c(404, json!(null)), perm("NOT_FOUND"));
        assert_eq!(c(410, json!(null)), perm("GONE"));
        assert_eq!(c(418, json!(null)), perm("HTTP_418"));
    }

    #[test]
    fn replayed_header_marks_a_replay() {
        let out = classify_http(200, &h(&[("Idempotent-Replayed", "true")]), &json!({}), Millis(0));
        assert_eq!(out, Success { receipt: json!({}), replayed: true });
    }

    #[test]
    fn retry_after_in_seconds_and_in_every_http_date_form() {
        // 1994-11-06T08:49:37Z = 784111777 s
        let now = Millis(784_111_777_000 - 5_000);
        for date in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            assert_eq!(parse_retry_after(date, now), Some(5_000), "{date}");
        }
        assert_eq!(parse_retry_after("120", now), Some(120_000));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", Millis(784_111_777_000 + 1)), Some(0));
        assert_eq!(parse_retry_after("soon", now), None);
        let out = classify_http(503, &h(&[("retry-after", "3")]), &json!(null), now);
        assert_eq!(out, Transient { code: Some("HTTP_503".into()), retry_after_ms: Some(3_000) });
    }

    #[test]
    fn retry_after_clock_fields_are_checked_one_by_one() {
        let day = |clock: &str| parse_http_date(&format!("Sun, 06 Nov 1994 {clock} GMT"));
        // The last valid value of each field (a leap second included) is read...
        assert_eq!(day("23:59:60"), Some(Millis((784_080_000 + 23 * 3600 + 59 * 60 + 60) * 1000)));
        // ...one past it is refused, whichever field it is.
        assert_eq!(day("24:00:00"), None);
        assert_eq!(day("08:60:00"), None);
        assert_eq!(day("08:49:61"), None);
        assert_eq!(day("08:49"), None, "a clock has three fields");
    }

    #[test]
    fn retry_after_in_seconds_too_large_to_count_is_the_longest_delay() {
        for huge in ["99999999999999999999999", "9007199254741"] {
            assert_eq!(parse_retry_after(huge, Millis(0)), Some(MAX_RETRY_AFTER_MS), "{huge}");
        }
        assert_eq!(parse_retry_after("9007199254740", Millis(0)), Some(9_007_199_254_740_000));
        // An HTTP date has a year of at most four digits: it never reaches the clamp.
        let last = parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", Millis(0));
        assert_eq!(last, Some(253_402_300_799_000));
    }

    #[test]
    fn http_dates_refuse_what_is_not_exactly_one_day_year_and_clock() {
        let at = |s: &str| parse_http_date(s).map(|m| m.0 / 1000);
        assert_eq!(at("Sun, 06 Nov 1994 +08:+49:+37 GMT"), Some(784_111_777), "a field may have a plus sign");
        assert_eq!(at("SUN, 06 NOV 1994 08:49:37 gmt"), Some(784_111_777), "months in any case");
        for bad in [
            "Sun, 06 Nov 1994 08::37 GMT",
            "Sun, 06 Nov 1994 08:49:37: GMT",
            "Sun, 06 Nov 1994 08:49:37:00 GMT",
            "Sun, 06 Nov 1994 08:+:37 GMT",
            "Sun, 06 Nov 1994 08:4x:37 GMT",
            "Sun, 06 Nov 1994 99999999999999999999:49:37 GMT",
            "Sun, 06 Nov 1994 GMT",
            "Sun, 06 1994 08:49:37 GMT",
            "Sun, 06 Nov 08:49:37 GMT",
            "Sun, 06 Nov 1994 1 08:49:37 GMT",
            "Sun, 99999999999999999999 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 99999999999999999999 08:49:37 GMT",
            "Sun, 06 Nov 199 08:49:37 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 November 1994 08:49:37 GMT",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
        assert_eq!(parse_retry_after("", Millis(0)), None);
        assert_eq!(parse_retry_after("  ", Millis(0)), None);
        assert_eq!(parse_retry_after("+3", Millis(0)), None);
    }

    #[test]
    fn http_dates_read_two_digit_years_and_every_month_right() {
        let at = |s: &str| parse_http_date(s).map(|m| m.0 / 1000);
        // RFC 850 two-digit years: 00-69 are 20xx, 70-99 are 19xx.
        assert_eq!(at("Wednesday, 06-Nov-69 08:49:37 GMT"), Some(3_150_953_377));
        assert_eq!(at("Thursday, 01-Jan-70 00:00:00 GMT"), Some(0));
        // January and February count in the year before (the civil-date algorithm's shift).
        assert_eq!(at("Tue, 01 Feb 2000 00:00:00 GMT"), Some(949_363_200));
        assert_eq!(at("Wed, 01 Mar 2000 00:00:00 GMT"), Some(951_868_800));
        assert_eq!(at("Thu, 29 Feb 2024 12:00:00 GMT"), Some(1_709_208_000));
    }
}
