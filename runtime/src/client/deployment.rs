//! What the deployment supports, learned once from `hello` (at
//! [`crate::connect`], or at the first operation that needs to know), so a
//! feature the server is too old for is one clear error naming the version
//! it needs, not a server error about an unknown stage.
//!
//! | feature | needs | wire version |
//! |---|---|---|
//! | docrel at all (versioned writes are pipeline updates) | MongoDB 4.2 | 8 |
//! | transactions (`transactional_fan_out`, two-way writes in one transaction, your own) | a replica set (4.0) or a sharded cluster (4.2); elsewhere docrel falls back as documented | 7 / 8 |
//! | `latest_per_parent` (`$documents`, `$lookup` with `localField` and a pipeline) | MongoDB 5.1 | 14 |
//! | `Strategy::Lookup` with a view (`$lookup` with `localField` and a pipeline) | MongoDB 5.0 | 13 |
//! | `Strategy::Lookup` on a sharded cluster (`$lookup` into a sharded collection) | MongoDB 5.1 | 14 |
//! | a source update and its fan-outs in one round trip (client `bulkWrite`; older servers send one command per collection) | MongoDB 8.0 | 25 |

use crate::error::{Error, Result};
use crate::kept;
use mongodb::Client;
use std::sync::Mutex;

/// The oldest server docrel works with: MongoDB 4.2 (wire version 8).
pub const MIN_WIRE_VERSION: i32 = 8;

/// A feature some servers lack, with the wire version it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Feature {
    pub name: &'static str,
    pub wire: i32,
}

/// docrel's versioned writes (pipeline updates).
pub(crate) const DOCREL: Feature = Feature { name: "docrel (pipeline updates)", wire: MIN_WIRE_VERSION };
/// `latest_per_parent`: `$documents` and `$lookup` with `localField` and a pipeline.
pub(crate) const DOCUMENTS_STAGE: Feature = Feature { name: "latest_per_parent (the `$documents` stage)", wire: 14 };
/// `$lookup` with both `localField` and a pipeline.
pub(crate) const LOOKUP_PIPELINE: Feature =
    Feature { name: "Strategy::Lookup with a view (`$lookup` with `localField` and a pipeline)", wire: 13 };
/// `$lookup` from a sharded collection.
pub(crate) const LOOKUP_SHARDED: Feature =
    Feature { name: "Strategy::Lookup on a sharded cluster (`$lookup` into a sharded collection)", wire: 14 };

/// What `hello` said about a deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deployment {
    /// `maxWireVersion` of the server answering.
    pub max_wire_version: i32,
    /// A `mongos` answered: the deployment is a sharded cluster.
    pub sharded: bool,
    /// A replica set member answered (`setName`).
    pub replica_set: bool,
}

impl Deployment {
    /// Fails with [`Error::Unsupported`] when the deployment is older than `feature` needs.
    pub(crate) fn require(&self, feature: Feature) -> Result<()> {
        if self.max_wire_version >= feature.wire {
            return Ok(());
        }
        Err(Error::Unsupported {
            feature: feature.name,
            needs: release(feature.wire),
            server: format!("wire version {} ({})", self.max_wire_version, release(self.max_wire_version)),
        })
    }
}

/// The MongoDB release a wire version first appeared in.
fn release(wire: i32) -> &'static str {
    match wire {
        i32::MIN..=5 => "before MongoDB 3.6",
        6 => "MongoDB 3.6",
        7 => "MongoDB 4.0",
        8 => "MongoDB 4.2",
        9 => "MongoDB 4.4",
        10..=13 => "MongoDB 5.0",
        14 => "MongoDB 5.1",
        15..=16 => "MongoDB 5.2 to 5.3",
        17..=20 => "MongoDB 6.0",
        21..=24 => "MongoDB 7.0",
        _ => "MongoDB 8.0 or later",
    }
}

/// What `hello` said about the deployment a client talks to, kept with
/// that client ([`crate::kept`]).
#[derive(Default)]
struct Learned(Mutex<Option<Deployment>>);

/// Tests: the wire version every `hello` is taken to report.
static PRETEND: Mutex<Option<i32>> = Mutex::new(None);

/// Asks the deployment behind `client` what it is (one `hello`), keeps it
/// with the client, and fails if it is older than docrel needs.
/// `redacted_uri` names the deployment in the error, its secrets already
/// hidden by the caller, which owns the URI.
pub(crate) async fn learn(client: &Client, redacted_uri: String) -> Result<Deployment> {
    let hello = client
        .database("admin")
        .run_command(mongodb::bson::doc! {"hello": 1})
        .await
        .map_err(|e| Error::Connect { uri: redacted_uri, source: Box::new(e) })?;
    let deployment = Deployment {
        max_wire_version: hello.get_i32("maxWireVersion").unwrap_or(0),
        sharded: hello.get_str("msg").is_ok_and(|m| m == "isdbgrid"),
        replica_set: hello.get_str("setName").is_ok(),
    };
    let seen = pretended(deployment);
    seen.require(DOCREL)?;
    // What the server said is kept; a pretended version applies when read.
    *kept::of_client::<Learned>(client).0.lock().unwrap_or_else(|p| p.into_inner()) = Some(deployment);
    Ok(seen)
}

/// What `client`'s deployment said at [`crate::connect`], with the wire
/// version a test pretends; `None` for a client built without docrel.
fn learned(client: &Client) -> Option<Deployment> {
    let said = *kept::of_client::<Learned>(client).0.lock().unwrap_or_else(|p| p.into_inner());
    said.map(pretended)
}

fn pretended(mut deployment: Deployment) -> Deployment {
    let pretend = *PRETEND.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(wire) = pretend.or_else(pretended_by_env) {
        deployment.max_wire_version = wire;
    }
    deployment
}

/// Checks `feature` against the deployment `client` talks to.
///
/// Known for a client made by [`crate::connect`] or [`crate::connect_with`],
/// which ask the server once; a client built without docrel gets the
/// server's own error instead.
pub(crate) fn require(client: &Client, feature: Feature) -> Result<()> {
    match learned(client) {
        Some(known) => known.require(feature),
        None => Ok(()),
    }
}

/// Whether the deployment `client` talks to has `feature`; false when it
/// is not known (see [`require`]), so an optional way is taken only where
/// it is sure to work.
pub(crate) fn supports(client: &Client, feature: Feature) -> bool {
    learned(client).is_some_and(|known| known.max_wire_version >= feature.wire)
}

/// [`require`] on a sharded cluster only.
pub(crate) fn require_when_sharded(client: &Client, feature: Feature) -> Result<()> {
    match learned(client) {
        Some(known) if known.sharded => known.require(feature),
        _ => Ok(()),
    }
}

/// `DOCREL_PRETEND_WIRE_VERSION`, read by test builds only: a whole run
/// (the history checker, both of its processes) on the paths of an older
/// server, as [`pretend_wire_version`] does for one test binary.
fn pretended_by_env() -> Option<i32> {
    if !cfg!(feature = "testing") {
        return None;
    }
    std::env::var("DOCREL_PRETEND_WIRE_VERSION").ok()?.parse().ok()
}

/// Tests only: makes docrel take every deployment it connected to, or
/// connects to, as reporting `max_wire_version`; `None` ends it. The way to
/// see the errors of an old server without one. Process-wide: use it in a
/// test binary of its own.
#[cfg(feature = "testing")]
pub fn pretend_wire_version(max_wire_version: Option<i32>) {
    *PRETEND.lock().unwrap_or_else(|p| p.into_inner()) = max_wire_version;
}
