//! `outbox-gate`: the demo server — the demo app (with a stand-in login) on the gate,
//! serving the app and the package.
//!
//! ```text
//! outbox-gate [--addr 127.0.0.1:8787] [--db FILE|:memory:|postgres://...] [--www DIR] [--pkg DIR]
//!             [--retention-days 30] [--processing-lease-ms 30000] [--lock-timeout-ms 5000]
//!             [--pg-connections 16] [--work-delay-ms 0] [--test-endpoints]
//! ```

use outbox_gate::demo::{self, DemoOptions, DemoStore};
use outbox_gate::{pools, Config, Gate};
use std::path::PathBuf;
use std::process::exit;
use std::sync::Arc;
use std::time::Duration;

const USAGE: &str = "usage: outbox-gate [--addr HOST:PORT] [--db FILE|:memory:|postgres://URL] [--www DIR] [--pkg DIR]
                   [--retention-days N] [--processing-lease-ms N] [--lock-timeout-ms N] [--pg-connections N]
                   [--work-delay-ms N] [--test-endpoints]";

/// The command line, checked: unknown flags, missing values and numbers out of range are
/// refused at start, not discovered later.
struct Args {
    addr: String,
    db: String,
    www: Option<PathBuf>,
    pkg: Option<PathBuf>,
    config: Config,
    lock_timeout: Duration,
    pg_connections: u32,
    demo: DemoOptions,
}

fn number(flag: &str, value: &str, range: std::ops::RangeInclusive<u64>) -> Result<u64, String> {
    let n: u64 = value.parse().map_err(|_| format!("{flag} wants a whole number, not {value:?}"))?;
    if range.contains(&n) {
        Ok(n)
    } else {
        Err(format!("{flag} must be from {} to {}, not {n}", range.start(), range.end()))
    }
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        addr: "127.0.0.1:8787".into(),
        db: "outbox-gate.sqlite".into(),
        www: None,
        pkg: None,
        config: Config::default(),
        lock_timeout: Duration::from_secs(5),
        pg_connections: 16,
        demo: DemoOptions::default(),
    };
    while let Some(flag) = argv.next() {
        if flag == "--test-endpoints" {
            a.demo.test_endpoints = true;
            continue;
        }
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--addr" => a.addr = value,
            "--db" => a.db = value,
            "--www" => a.www = Some(value.into()),
            "--pkg" => a.pkg = Some(value.into()),
            "--retention-days" => {
                a.config.retention = Duration::from_secs(number(&flag, &value, 1..=3650)? * 24 * 3600);
            }
            "--processing-lease-ms" => {
                a.config.lease = Duration::from_millis(number(&flag, &value, 100..=86_400_000)?);
            }
            "--lock-timeout-ms" => a.lock_timeout = Duration::from_millis(number(&flag, &value, 1..=600_000)?),
            "--pg-connections" => a.pg_connections = u32::try_from(number(&flag, &value, 1..=1000)?).unwrap_or(16),
            "--work-delay-ms" => a.demo.work_delay = Duration::from_millis(number(&flag, &value, 0..=600_000)?),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    a.addr.parse::<std::net::SocketAddr>().map_err(|_| format!("--addr wants HOST:PORT, not {:?}", a.addr))?;
    Ok(a)
}

fn fail(message: &str) -> ! {
    eprintln!("outbox-gate: {message}");
    exit(1)
}

async fn serve<DB: DemoStore>(gate: Gate<DB>, args: Args) {
    let mut options = args.demo;
    (options.www, options.pkg) = (args.www, args.pkg);
    let test_endpoints = options.test_endpoints;
    // The purger's own handle on the ledger (the demo keeps `gate`).
    let purger = Gate::new(gate.pool().clone(), gate.config()).await.unwrap_or_else(|e| fail(&format!("ledger: {e}")));
    let app = demo::app(gate, options).await.unwrap_or_else(|e| fail(&format!("cannot create the demo's tables: {e}")));
    // Only once the demo's tables exist: started before, its first batch raced their
    // creation for SQLite's write lock, and a start could fail with "database is locked".
    spawn_purger(Arc::new(purger));
    let listener = tokio::net::TcpListener::bind(&args.addr)
        .await
        .unwrap_or_else(|e| fail(&format!("cannot listen on {}: {e}", args.addr)));
    println!("outbox-gate: demo server on http://{}/ (ledger: {})", args.addr, args.db);
    println!("outbox-gate: STAND-IN LOGIN — `Bearer <user>.<session>` is trusted as is; anyone can act as anyone.");
    if test_endpoints {
        println!(
            "outbox-gate: --test-endpoints: /api/effects (every actor's operation ids) is open; never deploy this."
        );
    }
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    demo::serve(listener, app, demo::Timeouts::default(), shutdown)
        .await
        .unwrap_or_else(|e| fail(&format!("server: {e}")));
}

/// Purges the ledger hourly (retention, orphaned reservations), in batches.
fn spawn_purger<DB: outbox_gate::ledger::Engine>(gate: Arc<Gate<DB>>) {
    tokio::spawn(async move {
        loop {
            match gate.purge(outbox_gate::gate::now_ms()).await {
                Ok(p) if p.completed + p.orphaned > 0 => {
                    println!("outbox-gate: purged {} expired and {} orphaned ledger records", p.completed, p.orphaned);
                }
                Ok(_) => {}
                Err(e) => eprintln!("outbox-gate: purge failed: {e}"),
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    });
}

fn main() {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return;
        }
        Err(e) => fail(&format!("{e}\n{USAGE}")),
    };
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| fail(&format!("tokio runtime: {e}")));
    rt.block_on(async move {
        let (db, config) = (args.db.clone(), args.config);
        if db.starts_with("postgres://") || db.starts_with("postgresql://") {
            let pool = pools::postgres(&db, args.pg_connections, args.lock_timeout)
                .await
                .unwrap_or_else(|e| fail(&format!("cannot connect to PostgreSQL: {e}")));
            let gate = Gate::new(pool, config).await.unwrap_or_else(|e| fail(&format!("ledger: {e}")));
            serve(gate, args).await;
        } else {
            let pool = if db == ":memory:" {
                eprintln!(
                    "outbox-gate: WARNING: in-memory ledger (--db :memory:): every key is forgotten on restart, \
                     so a resend after a restart is applied twice. For tests only."
                );
                pools::sqlite_in_memory().await
            } else {
                pools::sqlite_file(std::path::Path::new(&db), args.lock_timeout).await
            }
            .unwrap_or_else(|e| fail(&format!("cannot open {db}: {e}")));
            let gate = Gate::new(pool, config).await.unwrap_or_else(|e| fail(&format!("ledger: {e}")));
            serve(gate, args).await;
        }
    });
}
