//! Connecting to a deployment, counting the round trips a client makes, and
//! the spans docrel's operations run in.

pub(crate) mod connect;
pub mod deployment;
pub(crate) mod monitor;
pub(crate) mod release;
pub mod trace;

pub use connect::{options, redact, DEFAULT_SERVER_SELECTION_TIMEOUT, URI_VARIABLE};
pub use monitor::{Mark, RoundTrips};
