//! Connecting, with an error that names the URI and the fix instead of a hang.

use crate::error::{Error, Result};
use mongodb::options::ClientOptions;
use mongodb::Client;
use std::time::Duration;

/// How long to wait for a server before giving up, unless the URI sets
/// `serverSelectionTimeoutMS` itself.
pub const DEFAULT_SERVER_SELECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// The variable the scripts and examples read the server's URI from.
pub const URI_VARIABLE: &str = "MONGODB_URI";

/// Connects to `uri` and checks the server (the client layer of
/// [`crate::connect`], which also reads the stored schema).
pub async fn connect(uri: &str) -> Result<Client> {
    let options = options(uri).await?;
    connect_with(uri, options).await
}

/// Parses `uri` into client options with docrel's default server selection
/// timeout and, when a `tracing` subscriber records docrel's `DEBUG` spans
/// at this point, round-trip counting for them
/// ([`crate::client::trace::count_round_trips`]; install the subscriber first, or
/// call that yourself); adjust them (for example to
/// add command monitoring of your own, which keeps receiving every event) and
/// pass them to [`connect_with`](crate::connect_with).
pub async fn options(uri: &str) -> Result<ClientOptions> {
    let mut options = ClientOptions::parse(uri).await.map_err(|e| invalid(uri, &e))?;
    if options.server_selection_timeout.is_none() {
        options.server_selection_timeout = Some(DEFAULT_SERVER_SELECTION_TIMEOUT);
    }
    // Once any command event handler is installed, the driver builds an
    // event for every command (the command and its reply copied into
    // documents): a tenth of a small write's client CPU. So the counter is
    // only installed when docrel's spans are recorded.
    if tracing::enabled!(target: "docrel", tracing::Level::DEBUG) {
        crate::client::trace::count_round_trips(&mut options);
    }
    Ok(options)
}

/// [`connect`] with prepared options.
pub async fn connect_with(uri: &str, mut options: ClientOptions) -> Result<Client> {
    crate::kept::prepare(&mut options);
    let hosts: Vec<String> = options.hosts.iter().map(|h| h.to_string()).collect();
    let client = Client::with_options(options).map_err(|e| Error::Connect { uri: redact(uri), source: Box::new(e) })?;
    crate::kept::register(&client, hosts.join(","));
    // `hello` answers as a ping would, and says what the deployment supports.
    crate::client::deployment::learn(&client, redact(uri)).await?;
    Ok(client)
}

/// [`connect`] to the server named by `MONGODB_URI`.
pub async fn connect_from_env() -> Result<Client> {
    match std::env::var(URI_VARIABLE) {
        Ok(uri) => connect(&uri).await,
        Err(_) => Err(Error::Invalid {
            what: crate::error::Misuse::Environment,
            message: format!(
                "{URI_VARIABLE} is not set: set it to your deployment's connection string, for example \
                 `export {URI_VARIABLE}=mongodb://127.0.0.1:27017`"
            ),
        }),
    }
}

/// A URI with its secrets replaced by `***`, for messages and `Debug`: the
/// password of the user info, and the value of every query option that can
/// carry a secret (`tlsCertificateKeyFilePassword`, `authMechanismProperties`
/// with its session tokens, and any option whose name says password, secret,
/// token or key).
///
/// The user info is everything up to the last `@` (a password typed
/// without percent-encoding may hold `?`, `/`, `#`, `:` or `@`), so none of
/// the password is shown whatever it holds; an `@` in a query option hides
/// more than needed, never less.
///
/// ```
/// use docrel::client::redact;
/// assert_eq!(redact("mongodb://u:pw@h:1/db?tlsCertificateKeyFilePassword=s3&w=1"),
///            "mongodb://u:***@h:1/db?tlsCertificateKeyFilePassword=***&w=1");
/// assert_eq!(redact("mongodb://u:p?w/d@h:1/db"), "mongodb://u:***@h:1/db");
/// ```
pub fn redact(uri: &str) -> String {
    let (head, user_info, hosts_on) = split(uri);
    let mut out = head.to_owned();
    match user_info {
        Some((user, Some(_))) => {
            out.push_str(user);
            out.push_str(":***");
        }
        Some((user, None)) => out.push_str(user),
        None => {}
    }
    let (base, query) = match hosts_on.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (hosts_on, None),
    };
    out.push_str(base);
    if let Some(query) = query {
        let options: Vec<String> = query
            .split('&')
            .map(|option| match option.split_once('=') {
                Some((name, _)) if secret_option(name) => format!("{name}=***"),
                _ => option.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&options.join("&"));
    }
    out
}

/// The user info of a URI and the user and password in it.
pub(crate) type UserInfo<'a> = Option<(&'a str, Option<&'a str>)>;

/// `uri` in three: up to the scheme's `://`; the user info (everything up
/// to the last `@`, then split at its first `:` into the user and the
/// password); and from that `@` on (hosts, database, options).
pub(crate) fn split(uri: &str) -> (&str, UserInfo<'_>, &str) {
    let (head, rest) = uri.split_at(uri.find("://").map_or(0, |scheme| scheme + 3));
    let Some(at) = rest.rfind('@') else { return (head, None, rest) };
    let info = &rest[..at];
    let user_info = match info.split_once(':') {
        Some((user, password)) => (user, Some(password)),
        None => (info, None),
    };
    (head, Some(user_info), &rest[at..])
}

/// The error of a URI the driver refused. The driver's message may quote
/// what it took for a host, a port or an option's value: for a password
/// with an unencoded `?`, `/`, `:`, `@` or `#`, part of it. Then the error
/// names the character to encode instead; otherwise every secret is
/// replaced by `***` in what the driver said.
fn invalid(uri: &str, e: &mongodb::error::Error) -> Error {
    let said = match &*e.kind {
        mongodb::error::ErrorKind::InvalidArgument { message, .. } => message.clone(),
        _ => crate::error::reason(e),
    };
    let (head, user_info, hosts_on) = split(uri);
    let (user, password) = user_info.unwrap_or_default();
    let raw = |part: &str, extra: &[char]| part.chars().find(|c| ['/', '?', '#', '@'].contains(c) || extra.contains(c));
    let reason = match (raw(user, &[]), password.and_then(|p| raw(p, &[':']))) {
        (_, Some(c)) | (Some(c), None) if !head.is_empty() => format!(
            "the user name or password holds `{c}`, which a connection string must percent-encode (`%{:02X}`): \
             percent-encode both (RFC 3986) and try again",
            c as u32
        ),
        _ => {
            let options = hosts_on.split_once('?').map_or("", |(_, query)| query).split('&');
            let secrets = options.filter_map(|o| o.split_once('=').filter(|(name, _)| secret_option(name)));
            let secrets = password.into_iter().chain(secrets.map(|(_, value)| value));
            secrets.filter(|s| !s.is_empty()).fold(said, |said, secret| said.replace(secret, "***"))
        }
    };
    Error::InvalidUri { uri: redact(uri), reason }
}

fn secret_option(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["password", "secret", "token", "key", "authmechanismproperties"].iter().any(|s| name.contains(s))
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redacts_passwords() {
        assert_eq!(redact("mongodb://u:secret@h:1/db"), "mongodb://u:***@h:1/db");
        assert_eq!(redact("mongodb://h:1"), "mongodb://h:1");
        assert_eq!(redact("mongodb://u@h:1"), "mongodb://u@h:1");
        assert_eq!(
            redact("mongodb://h:1/?authMechanismProperties=AWS_SESSION_TOKEN:abc&tlsCAFile=/x&sslClientCertificateKeyPassword=p"),
            "mongodb://h:1/?authMechanismProperties=***&tlsCAFile=/x&sslClientCertificateKeyPassword=***"
        );
    }
}
