//! The server's release (`buildInfo`'s `version`), asked once per
//! deployment by the commands whose form depends on it rather than on a
//! wire feature: MongoDB 9.0's validation level `constraint` has no wire
//! version of its own. Kept with the deployment ([`crate::kept`]), so two
//! clusters of one process never share it.

use crate::error::{Error, Result};
use crate::kept;
use mongodb::bson::doc;
use mongodb::Database;
use std::sync::Mutex;

/// A server release, `(major, minor)`: `(9, 0)` for 9.0.4.
pub type Release = (u32, u32);

/// The release a deployment's `buildInfo` reported, kept with it.
#[derive(Default)]
struct Known(Mutex<Option<Release>>);

/// The release of the deployment `db` belongs to: one `buildInfo` the
/// first time, then what it said.
pub(crate) async fn of(db: &Database) -> Result<Release> {
    let known = kept::of_client::<Known>(db.client());
    if let Some(release) = *known.0.lock().unwrap_or_else(|p| p.into_inner()) {
        return Ok(release);
    }
    let info = db
        .client()
        .database("admin")
        .run_command(doc! {"buildInfo": 1})
        .await
        .map_err(|e| Error::driver("buildInfo", db.name(), e))?;
    let release = parse(info.get_str("version").unwrap_or_default());
    *known.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(release);
    Ok(release)
}

/// `(major, minor)` of a version string; `(0, 0)` for one that says
/// neither, which every check takes as the oldest.
pub(crate) fn parse(version: &str) -> Release {
    let mut parts = version.split(|c: char| !c.is_ascii_digit()).map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Tests only: makes docrel take the deployment `client` talks to as
/// reporting `version` (`"9.0.4"`), for this deployment alone, so the
/// commands a newer server would get are seen on any server.
#[cfg(feature = "testing")]
pub(crate) fn pretend(client: &mongodb::Client, version: &str) {
    *kept::of_client::<Known>(client).0.lock().unwrap_or_else(|p| p.into_inner()) = Some(parse(version));
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_version_string_reads_as_major_and_minor() {
        assert_eq!(super::parse("9.0.4"), (9, 0));
        assert_eq!(super::parse("8.2.0-rc1"), (8, 2));
        assert_eq!(super::parse(""), (0, 0));
    }
}
