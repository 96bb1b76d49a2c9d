//! What a public endpoint needs (SQLite; none of it depends on the engine): bounded keys
//! and actors, authentication before the body, no empty creates, JSON errors, no dotfiles,
//! test endpoints off by default, a command line that refuses bad numbers and an in-memory
//! ledger only by name.

mod common;

use common::{call, effects_of, request, start, Reply, Setup};
use outbox_gate::demo::DemoOptions;
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::Sqlite;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[tokio::test]
async fn keys_and_actors_longer_than_255_characters_are_refused_with_400() {
    let s = start::<Sqlite>("long_keys", Setup::default()).await;
    let body = json!({"weight": 1});
    let long = "k".repeat(256);
    let r = call(&s.base, "POST", "/api/records/workout", "alice", &long, body.clone()).await;
    assert_eq!((r.status, r.body["code"].as_str()), (400, Some("INVALID_IDEMPOTENCY_KEY")));
    let r = call(&s.base, "POST", "/api/records/workout", &"a".repeat(256), "k1", body.clone()).await;
    assert_eq!((r.status, r.body["code"].as_str()), (400, Some("INVALID_ACTOR")));
    let r = call(&s.base, "POST", "/api/records/workout", "alice", &"k".repeat(255), body.clone()).await;
    assert_eq!(r.status, 201, "255 characters are fine");
    let r = call(&s.base, "POST", "/api/records/workout", "alice", "", body).await;
    assert_eq!((r.status, r.body["code"].as_str()), (400, Some("MISSING_IDEMPOTENCY_KEY")));
    let receipt = reqwest::Client::new()
        .get(format!("{}/api/receipts/{}", s.base, "k".repeat(256)))
        .header("Authorization", "Bearer alice.s")
        .send()
        .await
        .unwrap();
    assert_eq!(receipt.status(), 400);
    assert_eq!(effects_of(&s.pool, &long).await, 0);
}

/// Issue 32 item 8: the ledger stored each operation's full method, path and query for the
/// retention (300 requests with a 60 KB query added 21.8 MB). A URL over 8 KiB is refused
/// with `414` before anything is reserved; a long one within it is stored cut to 255 bytes
/// with the SHA-256 of the whole target.
#[tokio::test]
async fn what_one_request_makes_the_ledger_store_is_bounded() {
    let s = start::<Sqlite>("bounded_operation", Setup::default()).await;
    let body = json!({"title": "t"});
    let too_long = format!("/api/records/plan?q={}", "x".repeat(8 * 1024));
    let r = call(&s.base, "POST", &too_long, "alice", "huge", body.clone()).await;
    assert_eq!((r.status, r.body["code"].as_str()), (414, Some("URI_TOO_LONG")));
    let target = format!("/api/records/plan?q={}", "y".repeat(8 * 1024 - 20));
    assert_eq!(target.len(), 8 * 1024, "the longest target accepted");
    let r = call(&s.base, "POST", &target, "alice", "long", body).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let stored: Vec<(String, String)> =
        sqlx::query_as("SELECT key, operation FROM gate_idempotency").fetch_all(&s.pool).await.unwrap();
    assert_eq!(stored.len(), 1, "nothing stored for the refused one: {stored:?}");
    let (key, operation) = &stored[0];
    assert_eq!(key, "long");
    assert!(operation.len() <= 255, "{} bytes", operation.len());
    assert!(operation.starts_with("POST /api/records/plan?q=yyy"), "{operation}");
    let digest: String = Sha256::digest(target.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert!(operation.ends_with(&format!("sha256:{digest}")), "{operation}");
    assert_eq!(effects_of(&s.pool, "huge").await, 0);
}

#[tokio::test]
async fn authentication_is_checked_before_the_body_is_read() {
    let s = start::<Sqlite>("auth_first", Setup::default()).await;
    let client = reqwest::Client::new();
    let url = format!("{}/api/records/workout", s.base);
    for body in [b"{not json".to_vec(), vec![b'x'; 200 * 1024]] {
        let r = Reply::of(client.post(&url).header("Idempotency-Key", "k").body(body).send().await.unwrap()).await;
        assert_eq!((r.status, r.body["code"].as_str()), (401, Some("UNAUTHENTICATED")));
    }
}

#[tokio::test]
async fn an_oversized_body_is_413_with_a_json_error() {
    let s = start::<Sqlite>("too_large", Setup::default()).await;
    let big = json!({"title": "x".repeat(100 * 1024)});
    let r = call(&s.base, "POST", "/api/records/plan", "alice", "big", big).await;
    assert_eq!((r.status, r.body["code"].as_str()), (413, Some("PAYLOAD_TOO_LARGE")));
}

#[tokio::test]
async fn a_create_or_update_without_a_body_is_refused_and_reserves_nothing() {
    let s = start::<Sqlite>("empty_body", Setup::default()).await;
    let empty = Reply::of(
        request(&reqwest::Client::new(), &s.base, "POST", "/api/records/workout", "alice", "c1", None)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((empty.status, empty.body["code"].as_str()), (422, Some("INVALID")));
    assert_eq!(effects_of(&s.pool, "c1").await, 0);
    // The key was not taken: the same key with a body is carried out.
    let created = call(&s.base, "POST", "/api/records/workout", "alice", "c1", json!({"weight": 3})).await;
    assert_eq!((created.status, created.replayed), (201, false));
    let path = format!("/api/records/{}", created.body["serverId"].as_str().unwrap().replace(':', "/"));
    for body in [None, Some(json!(null)), Some(json!([1]))] {
        let r = Reply::of(
            request(&reqwest::Client::new(), &s.base, "PUT", &path, "alice", "u1", body.as_ref()).send().await.unwrap(),
        )
        .await;
        assert_eq!((r.status, r.body["code"].as_str()), (422, Some("INVALID")), "{body:?}");
    }
    assert_eq!(effects_of(&s.pool, "u1").await, 0);
}

/// `/api/effects` lists every actor's operation ids: only with `--test-endpoints`. The
/// demo's own "Expire session" button (`/api/sessions/revoke`, the caller's own session)
/// works without it (issue 32 item 10: `scripts/demo.sh` passed `--test-endpoints` for that
/// button, and so served `/api/effects` to anyone).
#[tokio::test]
async fn the_effects_list_is_off_unless_asked_for_and_the_demo_works_without_it() {
    let options = DemoOptions { test_endpoints: false, ..DemoOptions::default() };
    let s = start::<Sqlite>("no_test_endpoints", Setup { options, ..Setup::default() }).await;
    let client = reqwest::Client::new();
    assert_eq!(client.get(format!("{}/api/effects", s.base)).send().await.unwrap().status(), 404);
    let revoke = client.post(format!("{}/api/sessions/revoke", s.base)).header("Authorization", "Bearer alice.s1");
    assert_eq!(revoke.send().await.unwrap().status(), 204);
    let r = call(&s.base, "POST", "/api/records/plan", "alice", "p", json!({"title": "t"})).await;
    assert_eq!((r.status, r.body["code"].as_str()), (401, Some("SESSION_EXPIRED")));
    let t = start::<Sqlite>("with_test_endpoints", Setup::default()).await;
    assert_eq!(client.get(format!("{}/api/effects", t.base)).send().await.unwrap().status(), 200);
}

/// `/api/effects?actor=` lists one actor's effects: the long soak's 10,000 operations of
/// its own actors filled the list's cap of 10,000, and the peer measured after it in the
/// same gate found its operations' effects missing.
#[tokio::test]
async fn the_effects_test_endpoint_lists_one_actor_when_asked() {
    let s = start::<Sqlite>("effects_of_one_actor", Setup::default()).await;
    for (actor, key) in [("alice", "a1"), ("bob", "b1"), ("alice", "a2")] {
        let r = call(&s.base, "POST", "/api/records/plan", actor, key, json!({"title": key})).await;
        assert_eq!(r.status, 201);
    }
    let list = |query: &'static str| {
        let url = format!("{}/api/effects{query}", s.base);
        async move { reqwest::get(url).await.unwrap().json::<Vec<serde_json::Value>>().await.unwrap() }
    };
    let ops =
        |list: Vec<serde_json::Value>| list.iter().map(|e| e["opId"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(ops(list("").await), ["a1", "b1", "a2"]);
    assert_eq!(ops(list("?actor=alice").await), ["a1", "a2"]);
    assert_eq!(ops(list("?actor=bob").await), ["b1"]);
    assert!(list("?actor=carol").await.is_empty());
}

#[tokio::test]
async fn dotfiles_are_not_served() {
    let www = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("www-dotfiles");
    std::fs::create_dir_all(www.join(".git")).unwrap();
    std::fs::write(www.join(".env"), "SECRET=1").unwrap();
    std::fs::write(www.join(".git/config"), "[core]").unwrap();
    std::fs::write(www.join("index.html"), "<p>hi</p>").unwrap();
    let options = DemoOptions { www: Some(www), ..DemoOptions::default() };
    let s = start::<Sqlite>("dotfiles", Setup { options, ..Setup::default() }).await;
    let get = |p: &str| reqwest::get(format!("{}{p}", s.base));
    assert_eq!(get("/index.html").await.unwrap().status(), 200);
    for path in ["/.env", "/.git/config", "/%2eenv", "/%2Egit/config", "/sub/../.env"] {
        let resp = get(path).await.unwrap();
        assert_eq!(resp.status(), 404, "{path}");
        assert!(!resp.text().await.unwrap().contains("SECRET"), "{path}");
    }
}

fn gate(args: &[&str], dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_outbox-gate"));
    cmd.args(args).current_dir(dir).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    cmd
}

#[test]
fn invalid_or_overflowing_numbers_on_the_command_line_are_refused_at_start() {
    let dir = std::env::temp_dir();
    for args in [
        ["--retention-days", "99999999999999999999999"].as_slice(),
        &["--retention-days", "0"],
        &["--processing-lease-ms", "-5"],
        &["--processing-lease-ms", "abc"],
        &["--work-delay-ms", "18446744073709551616"],
        &["--lock-timeout-ms", "1e3"],
        &["--addr", "nowhere"],
        &["--no-such-flag", "1"],
        &["--db"],
    ] {
        let out = gate(args, &dir).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage:"), "{args:?}");
    }
}

#[test]
fn the_ledger_is_a_file_by_default_and_in_memory_only_by_name_with_a_warning() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("default-db");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = gate(&["--addr", "127.0.0.1:0"], &dir).spawn().unwrap();
    let file = dir.join("outbox-gate.sqlite");
    let mut waited = 0;
    while !file.exists() && waited < 200 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(file.exists(), "the default ledger is the file outbox-gate.sqlite");

    let mut child = gate(&["--addr", "127.0.0.1:0", "--db", ":memory:"], &dir).spawn().unwrap();
    let first = BufReader::new(child.stderr.take().unwrap()).lines().next().unwrap().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(first.contains("WARNING: in-memory ledger"), "{first}");
}
