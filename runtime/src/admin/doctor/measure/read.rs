//! The reads every measurement starts from: an aggregate, and the
//! `$sample` stage of a collection too large to read whole.

use crate::admin::doctor::report::Coverage;
use crate::error::{Error, Result};
use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::Database;

pub(crate) fn as_u64(v: Option<&Bson>) -> Option<u64> {
    match v? {
        Bson::Int32(i) => u64::try_from(*i).ok(),
        Bson::Int64(i) => u64::try_from(*i).ok(),
        Bson::Double(d) if *d >= 0.0 => Some(*d as u64),
        _ => None,
    }
}

pub(crate) async fn aggregate(db: &Database, collection: &str, pipeline: Vec<BsonDoc>) -> Result<Vec<BsonDoc>> {
    let mut cursor = db
        .collection::<BsonDoc>(collection)
        .aggregate(pipeline)
        .await
        .map_err(|e| Error::driver("aggregate", collection, e))?;
    let mut out = Vec::new();
    while cursor.advance().await.map_err(|e| Error::driver("aggregate", collection, e))? {
        out.push(cursor.deserialize_current().map_err(|e| Error::driver("aggregate", collection, e))?);
    }
    Ok(out)
}

/// The first stage of every read of `collection`: a `$sample` when it is
/// larger than the limit.
pub(crate) async fn coverage(db: &Database, collection: &str, limit: u64) -> Result<(Coverage, Vec<BsonDoc>)> {
    let documents = db
        .collection::<BsonDoc>(collection)
        .estimated_document_count()
        .await
        .map_err(|e| Error::driver("count", collection, e))?;
    if documents > limit {
        Ok((Coverage { documents, read: limit, sampled: true }, vec![doc! {"$sample": {"size": limit as i64}}]))
    } else {
        Ok((Coverage { documents, read: documents, sampled: false }, Vec::new()))
    }
}
