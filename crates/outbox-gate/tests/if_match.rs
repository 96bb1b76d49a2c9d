//! An `If-Match` that is not text (a byte above 0x7f, as a browser sends a Latin-1 ETag):
//! the demo refuses it instead of reading "no base revision" and applying a stale edit
//! (SPEC §14: a stale base revision → 412, never a silent overwrite), and two such values
//! under one key are two fingerprints, not a replay.
mod common;

use common::{call, request, start, Reply, Setup};
use serde_json::{json, Value};
use sqlx::Sqlite;

async fn put(base: &str, path: &str, key: &str, if_match: &[u8], body: Value) -> Reply {
    let client = reqwest::Client::new();
    let mut req = request(&client, base, "PUT", path, "alice", key, Some(&body)).build().unwrap();
    req.headers_mut().insert("if-match", reqwest::header::HeaderValue::from_bytes(if_match).unwrap());
    Reply::of(client.execute(req).await.unwrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_if_match_that_is_not_text_is_refused_and_nothing_is_applied() {
    let s = start::<Sqlite>("if_match_bytes", Setup::default()).await;
    let created = call(&s.base, "POST", "/api/records/workout", "alice", "c", json!({"weight": 1})).await;
    let path = format!("/api/records/{}", created.body["serverId"].as_str().unwrap().replace(':', "/"));
    assert_eq!(put(&s.base, &path, "u1", b"1", json!({"weight": 2})).await.status, 200);
    assert_eq!(put(&s.base, &path, "u2", b"1", json!({"weight": 3})).await.status, 412, "stale");
    let unreadable = put(&s.base, &path, "u3", b"1\xe9", json!({"weight": 4})).await;
    assert_eq!((unreadable.status, unreadable.body["code"].as_str()), (400, Some("INVALID")), "{unreadable:?}");
    let records = <Sqlite as outbox_gate::demo::DemoStore>::records(&s.pool, "alice").await.unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["body"]["weight"], json!(2), "{records:?}");
}

/// The fingerprint an app's handler gets for a request with this `If-Match`.
async fn fingerprint_with(if_match: &'static [u8]) -> String {
    fingerprint_with_lines(&[if_match]).await
}

/// The same with one `If-Match` line per value.
async fn fingerprint_with_lines(lines: &[&'static [u8]]) -> String {
    use axum::extract::FromRequest;
    let mut req = axum::http::Request::builder()
        .method("PUT")
        .uri("/api/records/workout/1")
        .header("idempotency-key", "k")
        .body(axum::body::Body::from("{}"))
        .unwrap();
    for line in lines {
        req.headers_mut().append("if-match", axum::http::HeaderValue::from_bytes(line).unwrap());
    }
    let idempotent = outbox_gate::Idempotent::from_request(req, &()).await.expect("a valid request");
    idempotent.fingerprint().to_owned()
}

#[tokio::test]
async fn two_if_match_values_that_are_not_text_are_two_fingerprints() {
    let (a, b) = (fingerprint_with(b"1\xe9").await, fingerprint_with(b"1\xe8").await);
    assert_ne!(a, b, "another base revision is another request");
    assert_ne!(a, fingerprint_with(b"1").await);
}

/// A second `If-Match` line is part of the request: only the first one used to count, so
/// `"1"` then `"2"` was a replay of `"1"` alone. Nor are two lines the one line `"1, 2"`: a
/// handler reading the first line (`headers().get`, as the demo does) tells them apart.
#[tokio::test]
async fn every_if_match_line_counts_as_a_line() {
    let both = fingerprint_with_lines(&[b"1", b"2"]).await;
    assert_ne!(both, fingerprint_with(b"1").await);
    assert_ne!(both, fingerprint_with_lines(&[b"1", b"3"]).await);
    assert_ne!(both, fingerprint_with_lines(&[b"2", b"1"]).await, "in order");
    assert_ne!(both, fingerprint_with(b"1, 2").await);
    assert_eq!(both, fingerprint_with_lines(&[b"1", b"2"]).await);
}
