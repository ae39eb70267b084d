//! The catalog service: connect once, prepare the indexes, serve until
//! Ctrl-C or SIGTERM.

// ANCHOR: main
use std::error::Error;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let uri = std::env::var("MONGODB_URI").unwrap_or_else(|_| "mongodb://127.0.0.1:27017".into());
    let name = std::env::var("CATALOG_DB").unwrap_or_else(|_| "catalog".into());
    let addr = std::env::var("CATALOG_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".into());

    // One client for the process: it is a connection pool, shared by every
    // request through the state. `connect` fails after 5 s naming the URI
    // when no server answers, and refuses a server older than 4.2.
    let client = docrel::connect(&uri).await?;
    let db = client.database(&name);
    catalog_service::prepare(&db).await?;

    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("catalog-service: listening on http://{addr} (database `{name}`)");
    catalog_service::serve(listener, db, shutdown_signal()).await?;
    println!("catalog-service: stopped");
    Ok(())
}

/// Ctrl-C, or SIGTERM (what a container runtime sends) on Unix.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
// ANCHOR_END: main
