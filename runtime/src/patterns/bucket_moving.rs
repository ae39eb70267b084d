//! Buckets that a move fills from an embedded array
//! (`#[document(moved_from = Post::comments)]` on a bucket document): which
//! move, if any, an append must go through (the append itself is
//! `denormalize/moved/bucket_append.rs`, which keeps the array), and the
//! refusal of reads until the move has made every page (`moved`).

use super::bucket::Bucket;
use crate::error::{Error, Misuse, Result};
use crate::schema::document::Document;
use crate::schema::stored::{ActiveMove, MoveState};
use mongodb::Database;

impl<B: Document, P: Document, E> Bucket<B, P, E> {
    /// The move filling `B`'s pages now, if any; refused when its pages
    /// cannot take an append yet, or when this program declares one the
    /// database has not started while it keeps the array.
    pub(crate) fn moving(&self, db: &Database) -> Result<Option<&'static ActiveMove>> {
        let graph = crate::schema::graph::of(db);
        match graph.filling_pages(B::COLLECTION) {
            Some(mv) if mv.state < MoveState::Maintained => Err(Error::Invalid {
                what: Misuse::Schema,
                message: format!(
                    "`{}` is moving into buckets ({}): the pages take appends once the move is maintained; nothing \
                     was written. `docrel schema status` shows where it stands",
                    mv.spec.label(),
                    mv.state
                ),
            }),
            Some(mv) => Ok(Some(mv)),
            None => match graph.unmade_pages(B::COLLECTION) {
                Some(why) => {
                    Err(Error::Invalid { what: Misuse::Schema, message: format!("{why}; nothing was written") })
                }
                None => Ok(None),
            },
        }
    }

    /// Refuses a read of pages the move has not all made yet.
    pub(super) fn readable(&self, db: &Database) -> Result<()> {
        match crate::schema::graph::of(db).unmade_pages(B::COLLECTION) {
            Some(why) => Err(crate::store::moving::unmade(why)),
            None => Ok(()),
        }
    }
}
