//! What the reads through a reference field hold (the children of parents,
//! the referrers of targets): the database, the relationship, the ids
//! asked about, the read's options and the caller's session, and the one
//! find they run.

use super::request::union_projection;
use crate::error::Result;
use crate::schema::document::{Relation, View};
use crate::store::options::ReadOptions;
use crate::store::query::{Filter, Sort};
use mongodb::bson::{RawDocument, RawDocumentBuf};
use mongodb::{ClientSession, Database};

/// A read of the documents related to `ids` through `rel`'s field.
pub(crate) struct Related<'a, I> {
    pub(crate) db: &'a Database,
    pub(crate) rel: &'static Relation,
    pub(crate) ids: Vec<I>,
    pub(crate) read: ReadOptions,
    pub(crate) session: Option<&'a mut ClientSession>,
}

impl<'a, I> Related<'a, I> {
    /// The read of the documents related to `ids`, in the order `sort`
    /// until another is set.
    pub(crate) fn new(db: &'a Database, rel: &'static Relation, ids: Vec<I>, sort: Option<Sort>) -> Self {
        Related { db, rel, ids, read: ReadOptions::sorted(sort), session: None }
    }

    /// Finds the documents of `collection` matching `base` and the filter
    /// given, with the options, in the session, in one batch; only the
    /// fields of `V` and the reference field travel. Each is read through `each`.
    pub(crate) async fn find<V: View, U>(
        &mut self,
        collection: &'static str,
        base: Filter,
        each: impl FnMut(&RawDocument) -> Result<U>,
    ) -> Result<Vec<U>> {
        let filter = self.read.within(base).into_document()?;
        let options = self.read.one_batch(union_projection(std::iter::once(V::PROJECTION), self.rel.field))?;
        let coll = self.db.collection::<RawDocumentBuf>(collection);
        crate::store::moving::collect_find(&coll, filter, options, self.session.as_deref_mut(), each).await
    }
}
