//! Connecting, with an error that names the URI and the fix instead of a hang.

use crate::error::{Error, Result};
use mongodb::bson;
use mongodb::options::ClientOptions;
use mongodb::Client;
use std::time::Duration;

/// How long to wait for a server before giving up, unless the URI sets
/// `serverSelectionTimeoutMS` itself.
pub const DEFAULT_SERVER_SELECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// The variable the scripts and examples read the server's URI from.
pub const URI_VARIABLE: &str = "MONGODB_URI";

/// Connects to `uri` and checks that a server answers (one `ping`).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // Nothing listens on port 9: the error names the URI and the fix.
/// let err = docrel::connect("mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=200").await.unwrap_err();
/// assert!(err.to_string().contains("127.0.0.1:9"));
/// assert!(err.to_string().contains("MONGODB_URI"));
/// # }
/// ```
pub async fn connect(uri: &str) -> Result<Client> {
    let options = options(uri).await?;
    connect_with(uri, options).await
}

/// Parses `uri` into client options with docrel's default server selection
/// timeout; adjust them (for example to add command monitoring) and pass them
/// to [`connect_with`].
pub async fn options(uri: &str) -> Result<ClientOptions> {
    let mut options =
        ClientOptions::parse(uri).await.map_err(|e| Error::InvalidUri { uri: redact(uri), source: Box::new(e) })?;
    if options.server_selection_timeout.is_none() {
        options.server_selection_timeout = Some(DEFAULT_SERVER_SELECTION_TIMEOUT);
    }
    Ok(options)
}

/// Connects with prepared options and checks that a server answers.
pub async fn connect_with(uri: &str, options: ClientOptions) -> Result<Client> {
    let client = Client::with_options(options).map_err(|e| Error::Connect { uri: redact(uri), source: Box::new(e) })?;
    client
        .database("admin")
        .run_command(bson::doc! {"ping": 1})
        .await
        .map_err(|e| Error::Connect { uri: redact(uri), source: Box::new(e) })?;
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
    match std::env::var(URI_VARIABLE) {
        Ok(uri) => connect(&uri).await,
        Err(_) => Err(Error::Invalid {
            what: "environment",
            message: format!(
                "{URI_VARIABLE} is not set. Run through `scripts/test` or `scripts/demo`, which start the \
                 embedded server and set it, or export {URI_VARIABLE}=mongodb://HOST:PORT"
            ),
        }),
    }
}

/// Removes a password from a URI before it appears in a message.
fn redact(uri: &str) -> String {
    match (uri.find("://"), uri.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &uri[scheme + 3..at];
            let user = credentials.split(':').next().unwrap_or("");
            format!("{}{user}:***{}", &uri[..scheme + 3], &uri[at..])
        }
        _ => uri.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redacts_passwords() {
        assert_eq!(redact("mongodb://u:secret@h:1/db"), "mongodb://u:***@h:1/db");
        assert_eq!(redact("mongodb://h:1"), "mongodb://h:1");
    }
}
