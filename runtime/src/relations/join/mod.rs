//! Application-level joins: the related documents of many parents with one
//! `$in` query per target collection, projected on the views' fields, and
//! put back in each parent's order.
//!
//! - `request`: what a load asks (the [`Request`]s and [`JoinSet`]s the
//!   executor runs) and the names the loaders share;
//! - `run`: the executor ([`join`], [`Join`]): one query per collection;
//! - `referenced`: the load of referred documents ([`Referenced`], [`Load`]),
//!   and the slots each document fills once (shared with the `$lookup` way
//!   of `with_parents`);
//! - `related`: the reads through the reference field itself, whose options
//!   they share: the children of parents ([`Children`], [`Latest`]) and the
//!   referrers of targets ([`Referrers`]);
//! - `counts`: how many documents each of those reads would give, per id,
//!   in one aggregate, without reading them.

mod children;
mod counts;
mod referenced;
mod referrers;
mod related;
pub(crate) mod request;
mod run;

pub use children::{Children, Latest};
pub use referenced::{Load, Referenced};
pub use referrers::Referrers;
pub use request::{JoinSet, Request, DEFAULT_CHUNK};
pub use run::{join, join_chunked, Join};

pub(crate) use referenced::Found;
pub(crate) use request::FieldVisit;
pub(crate) use run::join_in;
