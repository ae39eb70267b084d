//! The collections a sync worker watches, from the schema graph, and the
//! server-side filter of its change stream.

use crate::schema::graph::Graph;
use mongodb::bson::{doc, Document as BsonDoc};

/// The collections a worker watches, from the schema graph.
#[derive(Debug, Clone)]
pub(super) struct Watched {
    /// Sources of copies.
    pub(super) sources: Vec<&'static str>,
    /// Children of subsets.
    pub(super) children: Vec<&'static str>,
    /// The schema graph they were read from (the database's).
    pub(super) graph: &'static Graph,
}

impl Watched {
    /// The sources and subset children of the graph `g`.
    pub(super) fn of_graph(g: &'static Graph) -> Self {
        Watched { sources: g.sources(), children: g.subset_children(), graph: g }
    }

    /// `coll` as a watched collection's static name, if it is one.
    pub(super) fn find(&self, coll: &str) -> Option<&'static str> {
        self.sources.iter().chain(&self.children).copied().find(|c| *c == coll)
    }

    /// Whether `coll` is the child of a subset (its deletes matter too).
    pub(super) fn is_child(&self, coll: &str) -> bool {
        self.children.contains(&coll)
    }

    /// Every watched collection once, sorted, for messages.
    pub(super) fn all(&self) -> Vec<&'static str> {
        let mut all: Vec<&'static str> = self.sources.iter().chain(&self.children).copied().collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// The server-side filter: only events the worker acts on travel. Copy
    /// sources need writes that create or change a document (a deleted
    /// source leaves dangling copies that verify reports; nothing to
    /// rewrite); subset children need deletes too. Invalidate always passes:
    /// the worker must see where its stream ended.
    pub(super) fn pipeline(&self) -> Vec<BsonDoc> {
        let mut or = vec![doc! {"operationType": "invalidate"}];
        if !self.sources.is_empty() {
            or.push(doc! {
                "ns.coll": {"$in": self.sources.clone()},
                "operationType": {"$in": ["insert", "update", "replace"]},
            });
        }
        if !self.children.is_empty() {
            or.push(doc! {
                "ns.coll": {"$in": self.children.clone()},
                "operationType": {"$in": ["insert", "update", "replace", "delete"]},
            });
        }
        vec![doc! {"$match": {"$or": or}}]
    }
}
