//! The demo server below the gate (issue 32 item 10): half-open connections are dropped
//! (header and body read timeouts), errors that never reach a handler are JSON, and an
//! operation id starting with a dot has a receipt.

mod common;

use common::{call, effects_of, start, Reply, Setup, TestDb};
use outbox_gate::demo::{self, DemoOptions, Timeouts};
use outbox_gate::{Config, Gate};
use serde_json::json;
use sqlx::Sqlite;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SHORT: Timeouts = Timeouts { header: Duration::from_millis(300), body: Duration::from_millis(300) };

/// The demo app served by `demo::serve` with [`SHORT`] timeouts; its address and pool.
async fn short_server(name: &str) -> (String, sqlx::Pool<Sqlite>) {
    let pool = Sqlite::fresh(name, Duration::from_secs(5)).await;
    let gate = Gate::new(pool.clone(), Config::default()).await.unwrap();
    let app = demo::app(gate, DemoOptions::default()).await.unwrap();
    let base = common::serve_with(app, SHORT).await;
    (base.trim_start_matches("http://").to_owned(), pool)
}

/// Everything the server sends until it closes the connection, and how long it took;
/// `None` if it was still open after 5 s.
async fn until_closed(stream: &mut TcpStream) -> Option<(String, Duration)> {
    let started = Instant::now();
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut got)).await;
    match read {
        Ok(_) => Some((String::from_utf8_lossy(&got).into_owned(), started.elapsed())),
        Err(_) => None,
    }
}

#[tokio::test]
async fn a_client_that_sends_half_a_header_is_dropped_within_the_timeout() {
    let (addr, _pool) = short_server("server_half_header").await;
    let mut half = TcpStream::connect(&addr).await.unwrap();
    half.write_all(b"POST /api/records/plan HTTP/1.1\r\nHost: x\r\nAuthoriz").await.unwrap();
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    for (what, stream) in [("half a header", &mut half), ("nothing", &mut silent)] {
        let (_, after) = until_closed(stream).await.unwrap_or_else(|| panic!("{what}: still open after 5 s"));
        assert!(after < Duration::from_secs(2), "{what}: closed after {after:?}");
    }
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_408_and_nothing_is_applied() {
    let (addr, pool) = short_server("server_slow_body").await;
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let head = "POST /api/records/plan HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice.s\r\n\
                Idempotency-Key: slow\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"title\":";
    stream.write_all(head.as_bytes()).await.unwrap();
    let (answer, after) = until_closed(&mut stream).await.expect("still open after 5 s");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""code":"REQUEST_TIMEOUT""#), "{answer}");
    assert!(after < Duration::from_secs(2), "{after:?}");
    assert_eq!(effects_of(&pool, "slow").await, 0);
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM gate_idempotency").fetch_one(&pool).await.unwrap();
    assert_eq!(rows, 0, "nothing reserved");
}

#[tokio::test]
async fn errors_below_the_gate_are_json() {
    let s = start::<Sqlite>("server_json_errors", Setup::default()).await;
    let client = reqwest::Client::new();
    let unknown = Reply::of(client.get(format!("{}/api/nope", s.base)).send().await.unwrap()).await;
    assert_eq!((unknown.status, unknown.body["code"].as_str()), (404, Some("NOT_FOUND")));
    let wrong_method = client.get(format!("{}/api/records/plan", s.base)).send().await.unwrap();
    assert!(wrong_method.headers().contains_key("allow"));
    let wrong_method = Reply::of(wrong_method).await;
    assert_eq!((wrong_method.status, wrong_method.body["code"].as_str()), (405, Some("METHOD_NOT_ALLOWED")));
    let big = client.get(format!("{}/api/records", s.base)).header("X-Big", "b".repeat(40 * 1024));
    let big = Reply::of(big.send().await.unwrap()).await;
    assert_eq!((big.status, big.body["code"].as_str()), (431, Some("HEADERS_TOO_LARGE")));
    let mut many = client.get(format!("{}/api/records", s.base));
    for i in 0..150 {
        many = many.header(format!("x-h{i}"), "v");
    }
    let many = Reply::of(many.send().await.unwrap()).await;
    assert_eq!((many.status, many.body["code"].as_str()), (431, Some("HEADERS_TOO_LARGE")));
}

/// An operation id starting with a dot was accepted, but its receipt was answered `404`
/// by the static files' dotfile filter ("this create never happened"): the filter now
/// stands in front of the static files only. Ids of dots only (`.`, `..`) cannot be put in
/// a URL path at all (parsers remove the segment) and are refused before anything is
/// reserved.
#[tokio::test]
async fn an_operation_id_starting_with_a_dot_has_a_receipt() {
    let www = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("www-dot-keys");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join(".env"), "SECRET=1").unwrap();
    let options = DemoOptions { www: Some(www), ..DemoOptions::default() };
    let s = start::<Sqlite>("server_dot_keys", Setup { options, ..Setup::default() }).await;
    let created = call(&s.base, "POST", "/api/records/plan", "alice", ".hidden", json!({"title": "t"})).await;
    assert_eq!(created.status, 201);
    let client = reqwest::Client::new();
    for path in ["/api/receipts/.hidden", "/api/receipts/%2Ehidden"] {
        let r = client.get(format!("{}{path}", s.base)).header("Authorization", "Bearer alice.s").send().await;
        let r = Reply::of(r.unwrap()).await;
        assert_eq!((r.status, &r.body), (200, &created.body), "{path}");
    }
    let env = client.get(format!("{}/.env", s.base)).send().await.unwrap();
    assert_eq!(env.status(), 404, "dotfiles are still not served");
    for key in [".", ".."] {
        let r = call(&s.base, "POST", "/api/records/plan", "alice", key, json!({"title": "t"})).await;
        assert_eq!((r.status, r.body["code"].as_str()), (400, Some("INVALID_IDEMPOTENCY_KEY")), "{key}");
        assert_eq!(effects_of(&s.pool, key).await, 0);
    }
}
