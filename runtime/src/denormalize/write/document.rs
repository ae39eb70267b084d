//! What a write of whole documents (insert, replace, save) of one type
//! owes the data around it, read from the schema graph once per write.

use crate::schema::document::Schema;
use crate::schema::graph::Graph;
use mongodb::bson::{Bson, Document as BsonDoc};

/// The facts a write of whole documents of one type acts on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DocumentPlan {
    /// The schema graph of the call the plan was made for.
    pub(crate) graph: &'static Graph,
    /// It holds copies: they are filled from their sources before the
    /// write and confirmed after it.
    pub(crate) fills: bool,
    /// It is a source of copies elsewhere: it carries a version.
    pub(crate) source: bool,
    /// Something is derived from it: copies elsewhere or subset summaries.
    pub(crate) derived: bool,
    /// It is summarized in its parents' subsets.
    pub(crate) summarized: bool,
    /// It holds a two-way reference.
    pub(crate) two_way: bool,
    /// It keeps a subset of its children.
    pub(crate) keeps_subsets: bool,
    /// Its collection holds an old array a move keeps, which its type does
    /// not declare (the new version's): a replace keeps it as stored.
    pub(crate) keeps_moved: bool,
}

impl DocumentPlan {
    /// The plan of a write of documents of `schema`.
    pub(crate) fn of(g: &'static Graph, schema: &'static Schema) -> Self {
        DocumentPlan {
            graph: g,
            fills: g.holds_copies(schema),
            source: !g.targets_of(schema.collection).is_empty(),
            derived: g.has_derived(schema.collection),
            summarized: !g.subsets_of(schema.collection).is_empty(),
            two_way: !g.two_way_of(schema).is_empty(),
            keeps_subsets: !g.subsets_kept_by(schema).is_empty(),
            keeps_moved: !g.kept_by_moves(schema).is_empty(),
        }
    }

    /// Whether a new document owes something to the documents around it:
    /// a source (its version, and holders already referring to it), a
    /// subset child (its summary), the holder of a two-way reference (the
    /// other side) or the keeper of a subset (its existing children).
    pub(crate) fn owes(&self, inserting: bool) -> bool {
        (inserting && self.source) || self.summarized || self.two_way || self.keeps_subsets
    }

    /// New documents keep no subset of their own: whatever summaries the
    /// caller wrote, a new parent's subsets start empty and are rebuilt
    /// from the children that exist (`after_new`).
    pub(crate) fn clear_kept(&self, schema: &'static Schema, docs: &mut [BsonDoc]) {
        if !self.keeps_subsets {
            return;
        }
        for subset in self.graph.subsets_kept_by(schema) {
            for d in docs.iter_mut() {
                d.insert(subset.rel.field, Bson::Array(Vec::new()));
            }
        }
    }

    /// Whether what a new document owes may change it after its write,
    /// whatever the data around it: a two-way side or a subset filled in,
    /// or a copy of itself (a source that holds copies).
    pub(crate) fn changes_new(&self) -> bool {
        self.two_way || self.keeps_subsets || (self.source && self.fills)
    }

    /// Whether an insert in a transaction sends its documents and the
    /// pushes into their parents' subsets in one `bulkWrite` (MongoDB
    /// 8.0+): when those pushes are all it owes inside the transaction (a
    /// transaction of its own, not the caller's `joined` one, reads the
    /// copies around its documents after the commit).
    pub(crate) fn pushes_with_insert(&self, joined: bool, client: &mongodb::Client) -> bool {
        !joined && self.summarized && !self.two_way && !self.keeps_subsets && crate::store::bulk::available(client)
    }

    /// Whether a replace must keep what docrel maintains (copy records,
    /// two-way references, subsets, the version) from the stored document,
    /// through [`super::replace_image`], rather than replace it whole.
    pub(crate) fn replaces_by_image(&self) -> bool {
        self.derived || self.fills || self.two_way || self.keeps_subsets || self.keeps_moved
    }
}
