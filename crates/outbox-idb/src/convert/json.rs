//! JSON out to JS: the planner's values and the crate's answers as plain JS values.

use outbox_core::metrics::{Attempts, Metrics};
use outbox_core::{FlushReport, SendOp, Ticket};
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// Any serializable value as a plain JS value: its JSON text, parsed by `JSON.parse`. One
/// string crosses the boundary instead of one call per property, and the engine's own
/// parser builds fast objects. A key `__proto__` becomes an own property (as `JSON.parse`
/// makes it), never the object's prototype. `null` if it has no JSON (a map with keys that
/// are not strings).
pub fn to_js<T: Serialize + ?Sized>(v: &T) -> JsValue {
    parse(serde_json::to_string(v).ok())
}

/// The non-generic half of [`to_js`], built once instead of once per type (issue 35).
fn parse(text: Option<String>) -> JsValue {
    text.and_then(|text| js_sys::JSON::parse(&text).ok()).unwrap_or(JsValue::NULL)
}

/// Sets each `(key, count)` of `fields` on `obj`, in order, as a number (the double
/// nearest the count, as `JSON.parse` reads its digits).
fn counts(obj: &JsValue, fields: &[(&str, u64)]) {
    for (key, n) in fields {
        crate::js::set(obj, key, &JsValue::from_f64(*n as f64));
    }
}

/// An instant or age as `JSON.parse` makes it of serde's text: a number, or `null`.
fn number_or_null(v: Option<i64>) -> JsValue {
    v.map_or(JsValue::NULL, |n| JsValue::from_f64(n as f64))
}

fn attempts_to_js(a: &Attempts) -> JsValue {
    let obj: JsValue = js_sys::Object::new().into();
    let fields = [
        ("success", a.success),
        ("transient", a.transient),
        ("auth", a.auth),
        ("permanent", a.permanent),
        ("conflict", a.conflict),
    ];
    counts(&obj, &fields);
    obj
}

/// A flush report as `JSON.parse` makes it of serde's text (fields in declaration order,
/// camelCase), set key by key: serde's serializers of the report, its receipts and counters,
/// built for this one type, were larger (issue 35).
pub fn report_to_js(r: &FlushReport) -> JsValue {
    let obj: JsValue = js_sys::Object::new().into();
    let set = |k: &str, v: &JsValue| crate::js::set(&obj, k, v);
    counts(
        &obj,
        &[
            ("claimed", r.claimed),
            ("released", r.released),
            ("succeeded", r.succeeded),
            ("deferred", r.deferred),
            ("held", r.held),
            ("blocked", r.blocked),
            ("conflicts", r.conflicts),
            ("stale", r.stale),
            ("skipped", r.skipped),
            ("converted", r.converted),
            ("applied", r.applied),
        ],
    );
    let receipts = js_sys::Array::new();
    for x in &r.receipts {
        let one: JsValue = js_sys::Object::new().into();
        crate::js::set(&one, "id", &x.id.as_str().into());
        crate::js::set(&one, "target", &x.target.as_str().into());
        crate::js::set(&one, "receipt", &to_js(&x.receipt));
        crate::js::set(&one, "replayed", &x.replayed.into());
        crate::js::set(&one, "applied", &x.applied.into());
        receipts.push(&one);
    }
    set("receipts", &receipts);
    let c = &r.counters;
    let counters: JsValue = js_sys::Object::new().into();
    crate::js::set(&counters, "attempts", &attempts_to_js(&c.attempts));
    counts(
        &counters,
        &[("replays", c.replays), ("conflicts", c.conflicts), ("permanentFailures", c.permanent_failures)],
    );
    set("counters", &counters);
    set("offline", &r.offline.into());
    set("nextDueAt", &number_or_null(r.next_due_at));
    obj
}

/// `metrics()`'s answer as `JSON.parse` makes it of serde's text, set key by key (see
/// [`report_to_js`]).
pub fn metrics_to_js(m: &Metrics) -> JsValue {
    let obj: JsValue = js_sys::Object::new().into();
    let set = |k: &str, v: &JsValue| crate::js::set(&obj, k, v);
    counts(&obj, &[("total", m.total)]);
    let s = &m.by_state;
    let by_state: JsValue = js_sys::Object::new().into();
    counts(&by_state, &[("queued", s.queued), ("sending", s.sending), ("held", s.held), ("blocked", s.blocked)]);
    set("byState", &by_state);
    set("oldestQueuedAgeMs", &number_or_null(m.oldest_queued_age_ms));
    counts(&obj, &[("undecodable", m.undecodable)]);
    set("attempts", &attempts_to_js(&m.attempts));
    counts(&obj, &[("replays", m.replays), ("conflicts", m.conflicts), ("permanentFailures", m.permanent_failures)]);
    obj
}

/// What `send(op)` receives, as `JSON.parse` makes it of serde's text, set key by key (see
/// [`report_to_js`]); the body and revision through [`to_js`].
pub fn send_op_to_js(op: &SendOp) -> JsValue {
    let obj: JsValue = js_sys::Object::new().into();
    let set = |k: &str, v: &JsValue| crate::js::set(&obj, k, v);
    set("id", &op.id.as_str().into());
    set("kind", &op.kind.into());
    set("target", &op.target.as_str().into());
    set("body", &to_js(&op.body));
    set("revision", &to_js(&op.revision));
    set("fingerprint", &op.fingerprint.as_str().into());
    counts(&obj, &[("attempt", op.attempt)]);
    set("owner", &op.owner.as_str().into());
    obj
}

/// A claim's ticket `{tabId, fence}`, as `JSON.parse` makes it of serde's text (see
/// [`report_to_js`]).
pub fn ticket_to_js(t: &Ticket) -> JsValue {
    let obj: JsValue = js_sys::Object::new().into();
    crate::js::set(&obj, "tabId", &t.tab_id.as_str().into());
    counts(&obj, &[("fence", t.fence)]);
    obj
}

#[cfg(test)]
mod tests {
    use super::*;
    use outbox_core::flush::ReceiptReport;
    use outbox_core::metrics::{ByState, Counters};
    use serde_json::json;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    fn text(v: &JsValue) -> String {
        js_sys::JSON::stringify(v).ok().and_then(|s| s.as_string()).expect("JSON text")
    }

    fn attempts(k: u64) -> Attempts {
        Attempts { success: k, transient: k + 1, auth: k + 2, permanent: k + 3, conflict: k + 4 }
    }

    /// The reports, metrics, send ops and tickets set key by key are what serde's text made
    /// `JSON.parse` build: the same keys in the same order, the same numbers (past 2^53
    /// too), `null`s, receipts, bodies and revisions.
    #[wasm_bindgen_test]
    fn reports_metrics_sends_and_tickets_are_as_serde_and_json_parse_made_them() {
        let big = [0, 1, 7, (1 << 53) + 1, u64::MAX];
        for (i, &n) in big.iter().enumerate() {
            let receipt = |id: &str, receipt| ReceiptReport {
                id: id.into(),
                target: format!("/t/{i}"),
                receipt,
                replayed: i % 2 == 0,
                applied: i % 3 == 0,
            };
            let report = FlushReport {
                claimed: n,
                released: n / 2,
                succeeded: n / 3,
                deferred: 4,
                held: 5,
                blocked: 6,
                conflicts: 7,
                stale: 8,
                skipped: 9,
                converted: 10,
                applied: n,
                receipts: (0..i)
                    .map(|k| receipt(&format!("op{k}"), json!({"__proto__": {"x": k}, "v": [1.5, null, "s"]})))
                    .collect(),
                counters: Counters { attempts: attempts(n / 5), replays: 1, conflicts: 2, permanent_failures: n },
                offline: i == 1,
                next_due_at: [None, Some(-1), Some(i64::MAX), Some(1_700_000_000_000), Some(0)][i],
            };
            assert_eq!(text(&report_to_js(&report)), text(&to_js(&report)));
            let metrics = Metrics {
                total: n,
                by_state: ByState { queued: 1, sending: n, held: 3, blocked: 4 },
                oldest_queued_age_ms: [Some(5), None, Some(i64::MIN), Some(i64::MAX), Some(0)][i],
                undecodable: n / 7,
                attempts: attempts(n / 11),
                replays: n,
                conflicts: 3,
                permanent_failures: 4,
            };
            assert_eq!(text(&metrics_to_js(&metrics)), text(&to_js(&metrics)));
            let op = SendOp {
                id: format!("id{i}"),
                kind: ["create", "update", "delete", "create", "update"][i],
                target: "t\u{e9}\"x".into(),
                body: [json!({"__proto__": 1, "a": [1, {"b": null}]}), json!(null), json!("s"), json!(-0.5), json!([])]
                    [i]
                    .clone(),
                revision: [json!(null), json!(3), json!("etag"), json!(1e300), json!({"r": 1})][i].clone(),
                fingerprint: "f".repeat(i),
                attempt: n,
                owner: "o".into(),
            };
            assert_eq!(text(&send_op_to_js(&op)), text(&to_js(&op)));
            let ticket = Ticket { tab_id: format!("tab{i}"), fence: n };
            assert_eq!(text(&ticket_to_js(&ticket)), text(&to_js(&ticket)));
        }
    }
}
