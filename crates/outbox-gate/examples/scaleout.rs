//! Scale-out proof: three gate processes on one PostgreSQL, a bounded load from one client
//! on loopback, then the invariants checked in the database and the figures printed.
//!
//! ```text
//! scripts/pg.sh cargo run --release -p outbox-gate --example scaleout -- [--gate target/release/outbox-gate]
//!     [--ops 5000] [--concurrency 64] [--duplicates-percent 10] [--aborts-percent 3]
//! ```
//!
//! Each operation creates a record with its own key, sent to process `i % 3`; about one in
//! ten is sent a second time, at once, to another process (the same key racing itself across
//! processes); a few are abandoned by the client a few milliseconds in, and resent later as
//! an outbox would. Afterwards, in the database: every operation took effect exactly once;
//! every answer seen for a key equals the key's stored answer; no 5xx but transient `503`s.
//! A violation exits with status 1. The figures are printed, never asserted.
//!
//! It creates a database of its own next to `DATABASE_URL`'s and drops it at the end.

use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::Row;
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PORTS: [u16; 3] = [8811, 8812, 8813];

struct Options {
    gate: String,
    ops: usize,
    concurrency: usize,
    duplicates_percent: u64,
    aborts_percent: u64,
}

fn options() -> Options {
    let mut o = Options {
        gate: "target/release/outbox-gate".into(),
        ops: 5000,
        concurrency: 64,
        duplicates_percent: 10,
        aborts_percent: 3,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).unwrap_or_else(|| panic!("{} needs a value", pair[0]));
        let num = || value.parse::<u64>().unwrap_or_else(|_| panic!("{} wants a number", pair[0]));
        match pair[0].as_str() {
            "--gate" => o.gate = value.clone(),
            "--ops" => o.ops = usize::try_from(num()).unwrap(),
            "--concurrency" => o.concurrency = usize::try_from(num()).unwrap().max(1),
            "--duplicates-percent" => o.duplicates_percent = num().min(100),
            "--aborts-percent" => o.aborts_percent = num().min(100),
            other => panic!("unknown option {other}"),
        }
    }
    o
}

/// The gate processes, killed when dropped (also on a panic).
struct Gates(Vec<Child>);

impl Drop for Gates {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A small deterministic generator (xorshift), so that a run can be repeated.
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[derive(Clone, Copy)]
struct Shot {
    op: usize,
    gate: usize,
    /// Abandon the request after this long.
    abort_after: Option<Duration>,
}

#[derive(Debug)]
enum Outcome {
    Answer { status: u16, replayed: bool, retry_after: bool, body: Value, latency: Duration },
    Aborted,
    Failed(String),
}

fn actor(op: usize) -> String {
    format!("user{}", op % 97)
}

fn key(op: usize) -> String {
    format!("scale-{op}")
}

fn body(op: usize) -> Value {
    json!({"weight": op % 1000, "title": format!("op {op}")})
}

async fn send(client: &reqwest::Client, s: Shot) -> Outcome {
    let started = Instant::now();
    let req = client
        .post(format!("http://127.0.0.1:{}/api/records/workout", PORTS[s.gate]))
        .header("Authorization", format!("Bearer {}.s", actor(s.op)))
        .header("Idempotency-Key", key(s.op))
        .json(&body(s.op))
        .send();
    let resp = match s.abort_after {
        Some(after) => match tokio::time::timeout(after, req).await {
            Ok(r) => r,
            Err(_) => return Outcome::Aborted,
        },
        None => req.await,
    };
    match resp {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let replayed = resp.headers().get("idempotent-replayed").is_some_and(|v| v == "true");
            let retry_after = resp.headers().contains_key("retry-after");
            let body = resp.json().await.unwrap_or(Value::Null);
            Outcome::Answer { status, replayed, retry_after, body, latency: started.elapsed() }
        }
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() {
    let o = options();
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL: run through scripts/pg.sh");
    let (server, _) = base.split_once('?').unwrap_or((&base, ""));
    let (server, _) = server.rsplit_once('/').expect("DATABASE_URL ends with /DATABASE");
    let db = format!("outbox_scaleout_{}", std::process::id());
    let url = format!("{server}/{db}");
    let admin = PgPoolOptions::new().max_connections(1).connect(&base).await.expect("connect");
    sqlx::query(&format!("CREATE DATABASE {db}")).execute(&admin).await.expect("create database");

    let gates = Gates(
        PORTS
            .iter()
            .map(|port| {
                Command::new(&o.gate)
                    .args(["--addr", &format!("127.0.0.1:{port}"), "--db", &url, "--pg-connections", "20"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap_or_else(|e| {
                        panic!("cannot start {}: {e} (build it: cargo build --release -p outbox-gate)", o.gate)
                    })
            })
            .collect(),
    );
    let client = reqwest::Client::builder().pool_max_idle_per_host(o.concurrency).build().unwrap();
    for port in PORTS {
        let mut up = false;
        for _ in 0..200 {
            if client.get(format!("http://127.0.0.1:{port}/api/records")).send().await.is_ok() {
                up = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(up, "gate on port {port} did not start");
    }

    // The load: every operation once, some twice at once on another process, some abandoned.
    let mut draw = Draw(0x5eed_f0b0);
    let mut plan = Vec::new();
    for op in 0..o.ops {
        let gate = op % PORTS.len();
        let abort_after = (draw.below(100) < o.aborts_percent).then(|| Duration::from_millis(1 + draw.below(8)));
        plan.push(Shot { op, gate, abort_after });
        if draw.below(100) < o.duplicates_percent {
            plan.push(Shot { op, gate: (gate + 1) % PORTS.len(), abort_after: None });
        }
    }
    let started = Instant::now();
    let mut outcomes: Vec<(Shot, Outcome)> = stream::iter(plan)
        .map(|s| {
            let client = client.clone();
            async move { (s, send(&client, s).await) }
        })
        .buffer_unordered(o.concurrency)
        .collect()
        .await;
    let load_time = started.elapsed();
    let load_requests = outcomes.len();

    // As an outbox would: resend what got no final answer (abandoned, 409, 503) until it does.
    let mut pending: Vec<usize> = outcomes
        .iter()
        .filter(|(_, out)| !matches!(out, Outcome::Answer { status, .. } if *status != 409 && *status != 503))
        .map(|(s, _)| s.op)
        .collect();
    pending.sort_unstable();
    pending.dedup();
    for round in 0..20 {
        if pending.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200 * (round + 1))).await;
        let mut still = Vec::new();
        for op in pending {
            let s = Shot { op, gate: (op + 2) % PORTS.len(), abort_after: None };
            let out = send(&client, s).await;
            if !matches!(out, Outcome::Answer { status, .. } if status != 409 && status != 503) {
                still.push(op);
            }
            outcomes.push((s, out));
        }
        pending = still;
    }

    // The invariants, read from the database and from every answer seen.
    let pool = PgPoolOptions::new().max_connections(2).connect(&url).await.expect("connect to the run's database");
    let twice: i64 = sqlx::query(
        "SELECT COUNT(*) FROM (SELECT op_id, actor FROM demo_effects GROUP BY op_id, actor HAVING COUNT(*) > 1) t",
    )
    .fetch_one(&pool)
    .await
    .unwrap()
    .get(0);
    let effects: i64 = sqlx::query("SELECT COUNT(*) FROM demo_effects").fetch_one(&pool).await.unwrap().get(0);
    let stored: HashMap<String, (i64, String)> = sqlx::query(
        "SELECT key, response_status::bigint, response_body::text FROM gate_idempotency WHERE status = 'completed'",
    )
    .fetch_all(&pool)
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get::<String, _>(0), (r.get::<i64, _>(1), r.get::<String, _>(2))))
    .collect();
    let (mut latencies, mut replays, mut conflicts, mut busy, mut aborted, mut other_5xx, mut failed, mut differing) =
        (Vec::new(), 0, 0, 0, 0, 0, 0, 0);
    for (s, out) in &outcomes {
        match out {
            Outcome::Answer { status, replayed, retry_after, body, latency } => {
                latencies.push(*latency);
                replays += usize::from(*replayed);
                match *status {
                    409 => conflicts += 1,
                    503 if *retry_after => busy += 1,
                    500..=599 => other_5xx += 1,
                    _ => {
                        let same = stored.get(&key(s.op)).is_some_and(|(st, b)| {
                            i64::from(*status) == *st && serde_json::from_str::<Value>(b).ok().as_ref() == Some(body)
                        });
                        differing += usize::from(!same);
                    }
                }
            }
            Outcome::Aborted => aborted += 1,
            Outcome::Failed(e) => {
                failed += 1;
                eprintln!("scale-out: request failed: {e}");
            }
        }
    }
    latencies.sort_unstable();
    let total = outcomes.len();
    println!("scale-out: 3 gate processes (ports {PORTS:?}) on one PostgreSQL, client on loopback");
    println!(
        "  load: {load_requests} requests for {} operations, concurrency {}, {} % sent twice to another process, {} % abandoned mid-request",
        o.ops, o.concurrency, o.duplicates_percent, o.aborts_percent
    );
    println!(
        "  load phase: {:.0} requests/s ({load_requests} in {:.2} s); latency p50 {:.1} ms, p99 {:.1} ms",
        load_requests as f64 / load_time.as_secs_f64(),
        load_time.as_secs_f64(),
        percentile(&latencies, 0.50).as_secs_f64() * 1000.0,
        percentile(&latencies, 0.99).as_secs_f64() * 1000.0
    );
    println!(
        "  answers: {total} requests in all (resends included): {replays} replays, {conflicts} × 409 IN_PROGRESS, {busy} × 503 + Retry-After, {aborted} abandoned by the client, {failed} connection failures"
    );
    println!("  effects: {effects} for {} operations; keys with two effects: {twice}", o.ops);
    println!(
        "  answers differing from the key's stored answer: {differing}; other 5xx: {other_5xx}; never completed: {}",
        pending.len()
    );

    drop(gates);
    pool.close().await;
    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).execute(&admin).await;
    let ok = twice == 0
        && differing == 0
        && other_5xx == 0
        && failed == 0
        && pending.is_empty()
        && usize::try_from(effects).ok() == Some(o.ops);
    if !ok {
        eprintln!("scale-out: FAILED an invariant (see above)");
        std::process::exit(1);
    }
    println!("scale-out: every operation took effect exactly once; one answer per key");
}
