//! Connecting to a deployment, and counting the round trips a client makes.

pub mod connect;
pub mod monitor;
