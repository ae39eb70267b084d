//! The parents written while a move's copy runs. The copy reads a page of
//! arrays and writes their elements later: an element a mirror removed in
//! between would come back. Every mirror in `maintained` marks its parents
//! in its transaction, and the copy reconciles the marked ones after each
//! page, so no such element outlives the page.

use crate::error::Result;
use crate::schema::stored::ActiveMove;
use crate::store::session::Cx;
use mongodb::bson::{doc, Bson};

/// The collection of marks: `{_id: {m: <move id>, p: <parent id>}, at}`.
pub const MARKS_COLLECTION: &str = "_docrel_move_marks";

/// Marks `parents` as written during the copy of `mv`, in the call's
/// transaction: one statement for them all.
pub(crate) async fn mark(cx: &mut Cx<'_>, mv: &ActiveMove, parents: &[Bson]) -> Result<()> {
    if parents.is_empty() {
        return Ok(());
    }
    let statements = parents
        .iter()
        .map(|p| doc! {"q": {"_id": {"m": &mv.spec.id, "p": p.clone()}}, "u": {"$currentDate": {"at": true}}, "upsert": true})
        .collect();
    crate::store::updates::send_updates(cx, MARKS_COLLECTION, statements).await?;
    Ok(())
}
