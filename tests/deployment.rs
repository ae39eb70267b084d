//! The minimum server versions, checked: a deployment too old for docrel is
//! refused at connect, and one too old for a feature gets one clear error
//! naming the version it needs, before anything is sent. Simulated with the
//! test hook on the wire version `hello` reports (process-wide, so this file
//! holds one test).

use docrel::bson::{oid::ObjectId, DateTime};
use docrel::client::deployment::pretend_wire_version;
use docrel::testing::TestDb;
use docrel::{Document, Error, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug)]
#[document(collection = "hosts")]
struct Host {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug)]
#[document(collection = "logs")]
struct Log {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[parent_ref(to = Host, sort = "-at")]
    host: i32,
    at: DateTime,
    #[reference(to = Host)]
    seen_by: i32,
}

#[derive(View, Deserialize, Debug)]
#[view(of = Host)]
struct HostName {
    name: String,
}

#[tokio::test]
async fn old_deployments_get_one_clear_error_per_feature() -> docrel::Result<()> {
    // MongoDB 4.0: docrel's versioned writes need 4.2.
    pretend_wire_version(Some(7));
    let err = TestDb::new("deployment_old").await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Unsupported { needs: "MongoDB 4.2", .. }), "{text}");
    assert!(text.contains("wire version 7 (MongoDB 4.0)"), "{text}");

    // MongoDB 5.0: everything but `$documents`.
    pretend_wire_version(Some(13));
    let t = TestDb::new("deployment_5_0").await?;
    Host::repo(&t.db).insert(&Host { id: 1, name: "www".into() }).await?;
    Log::repo(&t.db).insert(&Log { id: ObjectId::new(), host: 1, at: DateTime::now(), seen_by: 1 }).await?;
    let mark = t.trips.mark();
    let err = Log::rels().host.latest_per_parent(&t.db, &[1], 5).await.unwrap_err();
    assert!(matches!(err, Error::Unsupported { needs: "MongoDB 5.1", .. }), "{err}");
    assert!(err.to_string().contains("latest_per_parent"), "names the feature: {err}");
    assert_eq!(t.trips.since(mark), 0, "refused before anything was sent");
    let find = Log::repo(&t.db).find(Log::fields().host.eq(1));
    let (logs, hosts) =
        Log::rels().seen_by.with_parents(find).view::<HostName>().strategy(docrel::load::Strategy::Lookup).await?;
    assert_eq!(
        (logs.len(), hosts.one(0).map(|h| h.name.as_str())),
        (1, Some("www")),
        "5.0 has $lookup with a pipeline"
    );

    // What the server really reports.
    pretend_wire_version(None);
    let t = TestDb::new("deployment_real").await?;
    Host::repo(&t.db).insert(&Host { id: 1, name: "www".into() }).await?;
    Log::repo(&t.db).insert(&Log { id: ObjectId::new(), host: 1, at: DateTime::now(), seen_by: 1 }).await?;
    let latest = Log::rels().host.latest_per_parent(&t.db, &[1], 5).await?;
    assert_eq!(latest.of(0).count(), 1);
    Ok(())
}
