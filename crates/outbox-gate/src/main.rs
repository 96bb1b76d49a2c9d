//! `outbox-gate`: the reference idempotency gate, serving the demo app and the package.
//!
//! ```text
//! outbox-gate [--addr 127.0.0.1:8787] [--db :memory:|FILE] [--www DIR] [--pkg DIR]
//!             [--retention-days 30] [--processing-lease-ms 30000] [--work-delay-ms 0]
//! ```

use outbox_gate::http::Gate;
use outbox_gate::ledger::Ledger;
use outbox_gate::sqlite::{Retention, SqliteLedger};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage: outbox-gate [--addr HOST:PORT] [--db :memory:|FILE] [--www DIR] [--pkg DIR] [--retention-days N] [--processing-lease-ms N] [--work-delay-ms N]");
        return;
    }
    let num = |name: &str, default: i64| -> i64 {
        opt(name).map_or(default, |v| v.parse().unwrap_or_else(|_| panic!("{name} must be a number")))
    };
    let addr = opt("--addr").unwrap_or_else(|| "127.0.0.1:8787".into());
    let db = opt("--db").unwrap_or_else(|| ":memory:".into());
    let retention = Retention {
        completed_ms: num("--retention-days", 30) * 24 * 3600 * 1000,
        processing_lease_ms: num("--processing-lease-ms", 30_000),
    };
    let ledger: Arc<dyn Ledger> = Arc::new(SqliteLedger::open(&db, retention).unwrap_or_else(|e| {
        eprintln!("outbox-gate: cannot open {db}: {e}");
        std::process::exit(1)
    }));
    let gate = Arc::new(Gate {
        ledger: ledger.clone(),
        revoked: Mutex::new(HashSet::new()),
        work_delay: Duration::from_millis(num("--work-delay-ms", 0) as u64),
    });
    let app = outbox_gate::app(gate, opt("--www").map(Into::into), opt("--pkg").map(Into::into));
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await.unwrap_or_else(|e| {
            eprintln!("outbox-gate: cannot listen on {addr}: {e}");
            std::process::exit(1)
        });
        // Retention: purge completed records past their expiry, hourly.
        tokio::spawn(async move {
            loop {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                if let Ok(n) = ledger.purge_expired(now) {
                    if n > 0 {
                        println!("outbox-gate: purged {n} expired ledger records");
                    }
                }
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
        });
        println!("outbox-gate: listening on http://{addr}/ (ledger: {db})");
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .expect("server");
    });
}
