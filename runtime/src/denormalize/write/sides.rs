//! The two-way side of new documents, as the plan of a write of whole
//! documents sees it: kept by `relations`, a layer above this one, so the
//! repository hands it in ([`crate::relations::two_way_inserted::SIDES`]).

use crate::error::Result;
use crate::schema::document::Schema;
use crate::store::session::Cx;
use futures::future::BoxFuture;
use mongodb::bson;

/// The other side of new documents' two-way references, written by
/// `relations` (above this layer, so handed in rather than imported).
pub(crate) trait TwoWaySides: Sync {
    /// Refuses documents whose two-way references the other side could
    /// never match; called before anything is written.
    fn check(
        &self,
        g: &'static crate::schema::graph::Graph,
        schema: &'static Schema,
        docs: &[bson::Document],
    ) -> Result<()>;

    /// Links new `docs` (written) with the other side of each two-way
    /// reference of `schema`, as `linking` says.
    fn link<'a>(
        &'a self,
        cx: &'a mut Cx<'_>,
        schema: &'static Schema,
        docs: &'a [bson::Document],
        linking: Linking,
    ) -> BoxFuture<'a, Result<()>>;
}

/// Which documents a new document's two-way references are linked with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Linking {
    /// Those it names, and those that already name it.
    Both,
    /// Only those that name it: after a commit, the writers the
    /// transaction's snapshot could not see (what it names was linked inside).
    Referring,
}
