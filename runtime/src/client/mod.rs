//! Connecting to a deployment, counting the round trips a client makes, and
//! the spans docrel's operations run in.

pub mod connect;
pub mod monitor;
pub mod trace;
