//! A catalog web service on docrel and axum: parts, and products that list
//! their parts with a copy of each part's name.
//!
//! - [`schema`]: the documents and their relations;
//! - [`routes`]: the endpoints, the state they share ([`AppState`]);
//! - [`error`]: docrel's errors as HTTP status codes ([`ApiError`]);
//! - [`prepare`] and [`serve`]: what `main` runs once at startup, and the
//!   server with its graceful shutdown, also used by the tests.
//!
//! Run it: `MONGODB_URI=mongodb://127.0.0.1:27017 cargo run -p catalog-service`
//! (database `CATALOG_DB`, default `catalog`; address `CATALOG_ADDR`,
//! default `127.0.0.1:3000`). Its tests (`tests/endpoints.rs`) start it on a
//! loopback port against the server of `MONGODB_URI` and call every endpoint.

pub mod error;
pub mod routes;
pub mod schema;

pub use error::ApiError;
pub use routes::{router, AppState};

use docrel::mongodb::Database;
use std::future::Future;
use tokio::net::TcpListener;

// ANCHOR: prepare
/// Startup work, once per process before serving: the schema published in
/// the database, so other programs writing there follow this one's rules
/// (a rename of a part by another service reaches the products' copies
/// here), and the indexes the schema declares (the unique `partno`; the
/// multikey `parts.id` that the rename's fan-out and the delete rule
/// query). Both are idempotent, so every instance of the service runs them.
pub async fn prepare(db: &Database) -> docrel::Result<()> {
    docrel::schema::publish(db).await?;
    schema::Part::repo(db).ensure_indexes().await?;
    schema::Product::repo(db).ensure_indexes().await?;
    Ok(())
}

/// Serves the routes on `listener` until `shutdown` completes, then stops
/// taking connections and lets the requests under way finish: a request
/// that has started a docrel write is not cut off between the write and
/// its fan-out.
pub async fn serve(
    listener: TcpListener,
    db: Database,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(AppState { db });
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}
// ANCHOR_END: prepare
