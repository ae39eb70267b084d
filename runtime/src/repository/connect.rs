//! Connecting: the client layer's checks (a server answers, recent
//! enough), then the schema published in the URI's database, so a process
//! obeys the rules other programs published before its first write.

use crate::client::connect as client;
use crate::error::Result;
use mongodb::options::ClientOptions;
use mongodb::Client;

/// Connects to `uri` and checks that a server answers (one `hello`), and
/// that it is MongoDB 4.2 or later ([`crate::Error::Unsupported`] otherwise).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // Nothing listens on port 9: the error names the URI and the fix.
/// let err = docrel::connect("mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=200").await.unwrap_err();
/// assert!(err.to_string().contains("127.0.0.1:9"));
/// assert!(err.to_string().contains("MONGODB_URI"));
/// # }
/// ```
///
/// When the URI names a database (`mongodb://host/shop`), the schema
/// published there is read and obeyed now ([`crate::schema::obey`]);
/// otherwise each database's is read before the first docrel write to it.
/// A stored schema this docrel cannot read is logged, and writes to that
/// database are then refused with [`crate::Error::SchemaLease`].
pub async fn connect(uri: &str) -> Result<Client> {
    let client = client::connect(uri).await?;
    obey_default(&client).await;
    Ok(client)
}

/// Connects with prepared options and checks that a server answers and is
/// recent enough, and reads the schema of the URI's database, as
/// [`connect`] does.
pub async fn connect_with(uri: &str, options: ClientOptions) -> Result<Client> {
    let client = client::connect_with(uri, options).await?;
    obey_default(&client).await;
    Ok(client)
}

/// Connects to the server named by `MONGODB_URI`.
///
/// ```no_run
/// # async fn f() -> docrel::Result<()> {
/// let client = docrel::connect_from_env().await?;
/// # Ok(()) }
/// ```
pub async fn connect_from_env() -> Result<Client> {
    let client = client::connect_from_env().await?;
    obey_default(&client).await;
    Ok(client)
}

/// Obeys the stored schema of the URI's database, if it names one. A
/// failure is not the connection's: the next write reads it again and says
/// why it cannot.
async fn obey_default(client: &Client) {
    let Some(db) = client.default_database() else { return };
    if let Err(e) = crate::schema::stored::obey(&db).await {
        tracing::warn!(target: "docrel::schema", database = db.name(), error = %e, "cannot read the stored schema");
    }
}
