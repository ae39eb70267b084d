//! MongoDB 8.0's client-level `bulkWrite`: statements for several
//! collections in one command, one round trip. The writes that owe work to
//! other collections (a source and its fan-outs, a delete's `on_delete`
//! rules) send it where this process's deployment takes it, known from
//! `docrel::connect`; before 8.0 they send a command per collection.

use crate::client::deployment;
use crate::store::session::Cx;
use mongodb::bson::{Bson, Document as BsonDoc};
use mongodb::options::{DeleteManyModel, UpdateManyModel, UpdateOneModel, WriteModel};
use mongodb::results::{SummaryBulkWriteResult, VerboseBulkWriteResult};
use mongodb::Namespace;

/// A client-level `bulkWrite`: MongoDB 8.0 (wire version 25).
pub(crate) const BULK_WRITE: deployment::Feature = deployment::Feature { name: "client bulkWrite", wire: 25 };

/// Whether this process's deployment takes a client-level `bulkWrite`
/// (MongoDB 8.0+, known from `docrel::connect`).
pub(crate) fn available(client: &mongodb::Client) -> bool {
    deployment::supports(client, BULK_WRITE)
}

/// The namespace of `collection` in the database of `cx`.
pub(crate) fn namespace(cx: &Cx<'_>, collection: &str) -> Namespace {
    Namespace::new(cx.db.name().to_owned(), collection)
}

/// An `updateOne` of `collection` for a batch.
pub(crate) fn update_one(cx: &Cx<'_>, collection: &str, filter: BsonDoc, update: BsonDoc) -> WriteModel {
    UpdateOneModel::builder().namespace(namespace(cx, collection)).filter(filter).update(update).build().into()
}

/// An `updateMany` of `collection` for a batch.
pub(crate) fn update_many(
    cx: &Cx<'_>,
    collection: &str,
    filter: BsonDoc,
    update: BsonDoc,
    array_filters: Option<Vec<BsonDoc>>,
) -> WriteModel {
    let array_filters = array_filters.map(|af| af.into_iter().map(Bson::Document).collect::<Vec<_>>());
    UpdateManyModel::builder()
        .namespace(namespace(cx, collection))
        .filter(filter)
        .update(update)
        .array_filters(array_filters)
        .build()
        .into()
}

/// A `deleteMany` of `collection` for a batch.
pub(crate) fn delete_many(cx: &Cx<'_>, collection: &str, filter: BsonDoc) -> WriteModel {
    DeleteManyModel::builder().namespace(namespace(cx, collection)).filter(filter).build().into()
}

/// Sends `models` as one ordered `bulkWrite` with per-statement results,
/// in the session of `cx` when it has one (a transaction's batch joins
/// it). Outside a transaction it carries the database's write concern,
/// which a client-level command does not inherit. The server answers with a
/// result per statement: for a batch whose every statement's count
/// matters, and few statements.
pub(crate) async fn send(
    cx: &mut Cx<'_>,
    models: Vec<WriteModel>,
) -> std::result::Result<VerboseBulkWriteResult, mongodb::error::Error> {
    let client = cx.db.client().clone();
    let mut sent = client.bulk_write(models).ordered(true).verbose_results();
    if let Some(wc) = cx.write_concern().await {
        sent = sent.write_concern(wc);
    }
    match cx.session() {
        Some(s) => sent.session(s).await,
        None => sent.await,
    }
}

/// [`send`] answered with the batch's totals only (`errorsOnly`): a batch
/// of many statements (an insert's documents) would otherwise bring back
/// a result for each.
pub(crate) async fn send_summary(
    cx: &mut Cx<'_>,
    models: Vec<WriteModel>,
) -> std::result::Result<SummaryBulkWriteResult, mongodb::error::Error> {
    let client = cx.db.client().clone();
    let mut sent = client.bulk_write(models).ordered(true);
    if let Some(wc) = cx.write_concern().await {
        sent = sent.write_concern(wc);
    }
    match cx.session() {
        Some(s) => sent.session(s).await,
        None => sent.await,
    }
}

/// The index of the first statement a `bulkWrite` error says the server
/// refused; `None` for any other failure (the connection cut, an answer
/// lost), after which what was written is unknown.
pub(crate) fn first_refused(e: &mongodb::error::Error) -> Option<usize> {
    match &*e.kind {
        mongodb::error::ErrorKind::BulkWrite(bulk) => bulk.write_errors.keys().min().copied(),
        _ => None,
    }
}
