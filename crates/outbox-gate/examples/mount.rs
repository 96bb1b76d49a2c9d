//! An app mounting the gate on its own route, with its own authentication (the README's
//! example, compiled). Run it on a throwaway PostgreSQL:
//!
//! ```text
//! scripts/pg.sh cargo run -p outbox-gate --example mount
//! ```
//!
//! It serves `POST /orders` on 127.0.0.1:8819, sends itself one order twice and prints both
//! answers (the second replayed) and the number of rows stored (one).

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use outbox_gate::{pools, Answer, Config, Gate, Idempotent};
use serde::Deserialize;
use serde_json::json;
use sqlx::Postgres;
use std::sync::Arc;
use std::time::Duration;

/// The app's own authentication: here a fixed token table standing in for a session store.
struct AuthUser {
    id: String,
}

impl<S: Send + Sync> FromRequestParts<S> for AuthUser {
    type Rejection = StatusCode;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<AuthUser, StatusCode> {
        match parts.headers.get("authorization").and_then(|v| v.to_str().ok()) {
            Some("Bearer secret-token-of-ada") => Ok(AuthUser { id: "ada".into() }),
            _ => Err(StatusCode::UNAUTHORIZED),
        }
    }
}

#[derive(Deserialize)]
struct Order {
    item: String,
}

struct App {
    gate: Gate<Postgres>,
}

async fn create_order(State(app): State<Arc<App>>, user: AuthUser, req: Idempotent) -> Response {
    let Ok(Some(order)) = req.json::<Order>() else { return StatusCode::UNPROCESSABLE_ENTITY.into_response() };
    let owner = user.id.clone();
    app.gate
        .run(&user.id, req, move |tx| {
            Box::pin(async move {
                let id: i64 = sqlx::query_scalar("INSERT INTO orders (owner, item) VALUES ($1, $2) RETURNING id")
                    .bind(owner)
                    .bind(order.item)
                    .fetch_one(&mut **tx)
                    .await?;
                Ok(Answer::new(StatusCode::CREATED, json!({ "serverId": id })))
            })
        })
        .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("DATABASE_URL").map_err(|_| "DATABASE_URL: run through scripts/pg.sh")?;
    let pool = pools::postgres(&url, 8, Duration::from_secs(5)).await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS orders (id BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL, item TEXT NOT NULL)",
    )
    .execute(&pool)
    .await?;
    let app = Arc::new(App { gate: Gate::new(pool.clone(), Config::default()).await? });
    let router = Router::new().route("/orders", post(create_order)).with_state(app);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:8819").await?;
    tokio::spawn(async move { axum::serve(listener, router).await });
    let client = reqwest::Client::new();
    for _ in 0..2 {
        let resp = client
            .post("http://127.0.0.1:8819/orders")
            .header("Authorization", "Bearer secret-token-of-ada")
            .header("Idempotency-Key", "order-1")
            .json(&json!({"item": "tea"}))
            .send()
            .await?;
        let replayed = resp.headers().contains_key("idempotent-replayed");
        println!("{} replayed={replayed} {}", resp.status(), resp.text().await?);
    }
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orders").fetch_one(&pool).await?;
    println!("orders stored: {rows}");
    Ok(())
}
