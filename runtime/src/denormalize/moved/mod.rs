//! Both shapes of a move kept equal (`#[document(moved_from = ..)]`): after
//! a write of either shape, in the write's transaction, the other shape of
//! each parent it touched is made to hold what the written one holds. The
//! repository wraps a write of a mirrored collection in that transaction
//! (`repository/moved.rs`); the change running the move copies what was
//! there before with the same rule.

mod bucket_append;
mod common;
mod inverse;
mod linked;
mod marks;
mod paged;
mod reconcile;

pub(crate) use common::{read, Reach};
pub(crate) use inverse::{inverses_from_arrays, named};
pub(crate) use marks::mark;
pub use marks::MARKS_COLLECTION;

use crate::error::Result;
use crate::schema::stored::{ActiveMove, OldArray};
use crate::store::session::Cx;
use mongodb::bson::Bson;

/// Makes the new shape of each of `parents` what their old arrays hold
/// (the documents their elements are, the parent references of the
/// documents their ids name, or the pages their slices are), as far as
/// `reach` goes.
pub(crate) async fn collection_from_arrays(
    cx: &mut Cx<'_>,
    mv: &ActiveMove,
    parents: &[Bson],
    reach: Reach,
) -> Result<()> {
    if mv.spec.buckets.is_some() {
        return paged::pages_from_arrays(cx, mv, parents, reach).await;
    }
    match mv.old {
        OldArray::Elements | OldArray::One => reconcile::collection_from_arrays(cx, mv, parents, reach).await,
        OldArray::Ids => linked::children_from_arrays(cx, mv, parents, reach).await,
    }
}

/// Makes the old arrays of `parents` hold what the new shape holds.
pub(crate) async fn arrays_from_collection(cx: &mut Cx<'_>, mv: &'static ActiveMove, parents: &[Bson]) -> Result<()> {
    if mv.spec.buckets.is_some() {
        return paged::arrays_from_pages(cx, mv, parents).await;
    }
    match mv.old {
        OldArray::Elements | OldArray::One => reconcile::arrays_from_collection(cx, mv, parents).await,
        OldArray::Ids => linked::arrays_from_children(cx, mv, parents).await,
    }
}

/// Refuses a write of the documents of a move back that gives a parent a
/// second one, while its field is not kept yet.
pub(crate) async fn one_each(cx: &mut Cx<'_>, mv: &'static ActiveMove, parents: &[Bson]) -> Result<()> {
    reconcile::one_each(cx, mv, parents).await
}
