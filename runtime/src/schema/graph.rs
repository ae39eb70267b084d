//! The schema graph: every relationship of the program, built once from the
//! link-time registry on first use, answering each question the runtime
//! asks — the copies of a source, the subsets of a child, the fields a
//! write must watch, the inverse of a two-way reference, who refers to a
//! collection — without rescanning the registry.
//!
//! Facts about one type are keyed by its descriptor (one `Schema` per Rust
//! type). Facts about stored documents (which copies a document of
//! `parts` feeds, which references point into `products`) are keyed by
//! collection, since that is what the server writes; when two types share
//! one collection the graph records it ([`Graph::shared_collections`]) and
//! the schema report shows it, instead of merging their rules silently.

use crate::schema::document::{Relation, RelationKind, Schema, SubsetSpec};
use crate::schema::elements::element_relations;
use crate::schema::registry::schemas;
/// The graph's maps: keyed by the program's own collection names and
/// descriptor addresses, never by input, so a fast non-cryptographic hasher
/// (every docrel write looks some of them up).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
use std::sync::OnceLock;

/// Where copies sit in a target document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Top-level fields, next to the reference `via` that holds the source id.
    Top {
        /// The stored name of the reference.
        via: &'static str,
    },
    /// Fields of the elements of a reference array whose `key` holds the source id.
    Array {
        /// The array.
        array: &'static str,
        /// The id field of each element.
        key: &'static str,
    },
}

/// One target path of a source: a collection and the place its copies sit,
/// with every copied field that travels in the same update.
#[derive(Debug, Clone)]
pub struct Target {
    /// The collection holding the copies.
    pub collection: &'static str,
    /// Where the copies sit.
    pub shape: Shape,
    /// `(copy field, source field)` pairs.
    pub fields: Vec<(&'static str, &'static str)>,
    /// The paths every fan-out to this target writes, made once (after the
    /// graph is complete) rather than formatted on each write.
    paths: std::sync::OnceLock<TargetPaths>,
    /// What is derived in turn from the copies this target writes.
    carried: Carried,
}

/// What is derived, in turn, from the copies a [`Target`] writes into its
/// holders: copies of those copies, and subset summaries carrying them,
/// as indices into the holders' collection's targets and subsets (the
/// chains of [`Graph::copies_of_copies`] and [`Graph::summaries_of_copies`]).
#[derive(Debug, Clone, Default)]
struct Carried {
    copies: Vec<usize>,
    summaries: Vec<usize>,
}

/// The paths of a [`Target`]'s writes.
#[derive(Debug, Clone)]
pub(crate) struct TargetPaths {
    /// [`Target::id_path`].
    pub(crate) id: String,
    /// Where each of [`Target::fields`] is set, in order: the copy field, or
    /// `<array>.$[e].<copy>` inside an array.
    pub(crate) set: Vec<String>,
    /// The array filter's key (`e.<key>`) of an array of copies.
    pub(crate) element_key: Option<String>,
}

impl Target {
    /// The copies `holder` keeps for this target, each with the source id
    /// it was copied from: the holder itself through its reference, or each
    /// element of the array of copies. A null id refers to no source (as a
    /// null reference), so it holds no copy.
    pub(crate) fn held_copies<'d>(
        &self,
        holder: &'d mongodb::bson::Document,
    ) -> Vec<(&'d mongodb::bson::Bson, &'d mongodb::bson::Document)> {
        use mongodb::bson::Bson;
        match self.shape {
            Shape::Top { via } => match holder.get(via) {
                Some(id) if *id != Bson::Null => vec![(id, holder)],
                _ => vec![],
            },
            Shape::Array { array, key } => holder
                .get_array(array)
                .into_iter()
                .flatten()
                .filter_map(Bson::as_document)
                .filter_map(|e| e.get(key).filter(|id| **id != Bson::Null).map(|id| (id, e)))
                .collect(),
        }
    }

    fn new(collection: &'static str, shape: Shape, fields: Vec<(&'static str, &'static str)>) -> Target {
        Target { collection, shape, fields, paths: std::sync::OnceLock::new(), carried: Carried::default() }
    }

    /// The paths of the copies in a holder document (`name`, or
    /// `<array>.name` inside an array of copies).
    pub(crate) fn copy_paths(&self) -> Vec<String> {
        self.fields
            .iter()
            .map(|(copy, _)| match self.shape {
                Shape::Top { .. } => (*copy).to_owned(),
                Shape::Array { array, .. } => format!("{array}.{copy}"),
            })
            .collect()
    }

    /// Whether other copies are made from the copies this target writes
    /// (a copy of a copy): its holders are sources whose version moves on
    /// with each write of these copies.
    pub(crate) fn relays(&self) -> bool {
        !self.carried.copies.is_empty()
    }

    /// Whether anything is derived from the copies this target writes:
    /// copies of them, or subset summaries carrying them.
    pub(crate) fn carries(&self) -> bool {
        self.relays() || !self.carried.summaries.is_empty()
    }

    /// The path matching target documents that hold a copy of the source.
    pub fn id_path(&self) -> String {
        self.paths().id.clone()
    }

    pub(crate) fn paths(&self) -> &TargetPaths {
        self.paths.get_or_init(|| match self.shape {
            Shape::Top { via } => TargetPaths {
                id: via.to_owned(),
                set: self.fields.iter().map(|(copy, _)| (*copy).to_owned()).collect(),
                element_key: None,
            },
            Shape::Array { array, key } => TargetPaths {
                id: format!("{array}.{key}"),
                set: self.fields.iter().map(|(copy, _)| format!("{array}.$[e].{copy}")).collect(),
                element_key: Some(format!("e.{key}")),
            },
        })
    }

    /// The source fields this target copies.
    pub fn source_fields(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.fields.iter().map(|(_, s)| *s)
    }
}

/// One parent array that summarizes a child collection (the subset pattern).
#[derive(Debug)]
pub struct SubsetTarget {
    /// The parent collection.
    pub parent: &'static str,
    /// The parent's array relation.
    pub rel: &'static Relation,
    /// What it summarizes.
    pub spec: &'static SubsetSpec,
    /// The child's field holding the parent id.
    pub parent_field: &'static str,
    /// The bound of the array.
    pub max: u32,
}

impl SubsetTarget {
    /// Whether this is the subset `parent` keeps in its relation `rel`.
    /// Compared by name, not by the descriptor's address: a reference to a
    /// descriptor computed in a `const` can point at a copy of it in a
    /// release build.
    pub fn is_kept_in(&self, parent: &str, rel: &Relation) -> bool {
        self.parent == parent && self.rel.field == rel.field
    }

    /// The fields of a child this subset depends on (`None`: all of them).
    pub fn fields(&self) -> Option<Vec<&'static str>> {
        let mut out: Vec<&'static str> = self.spec.fields?.to_vec();
        out.push(self.parent_field);
        out.extend(self.spec.key);
        out.extend(self.spec.sort.iter().map(|(f, _)| *f));
        Some(out)
    }
}

/// The whole program's schema, as a graph.
#[derive(Debug, Default)]
pub struct Graph {
    targets: HashMap<&'static str, Vec<Target>>,
    subsets: HashMap<&'static str, Vec<SubsetTarget>>,
    derived: HashMap<&'static str, Option<Vec<&'static str>>>,
    references: HashMap<&'static str, Vec<(&'static Schema, &'static Relation)>>,
    inverses: HashMap<usize, (&'static Schema, &'static Relation)>,
    by_collection: HashMap<&'static str, Vec<&'static Schema>>,
    held: HashMap<usize, Vec<(&'static str, Shape)>>,
    /// The stored rules of linked collections that their types do not
    /// declare (another program's, obeyed), each as a type of its own.
    supplements: HashMap<&'static str, Vec<&'static Schema>>,
    /// The moves between patterns in progress in the database.
    pub(crate) moves: Vec<super::stored::moves_state::ActiveMove>,
    /// The stored bounds linked types keep to beside their own:
    /// (collection, field, max); see [`Graph::bound`].
    pub(crate) bounds: Vec<(String, String, u32)>,
    /// The stored inverses of arrays linked types declare one-way.
    pub(crate) adopted: Vec<super::stored::inverses::AdoptedInverse>,
    /// The other sides of arrays made two-way, not built yet, that linked
    /// types declare: read from the arrays.
    pub(crate) building: Vec<super::stored::transitions::BuildingInverse>,
}

/// The graph of every document type linked into the program.
pub fn graph() -> &'static Graph {
    static LINKED: OnceLock<Graph> = OnceLock::new();
    LINKED.get_or_init(|| Graph::build(schemas()))
}

/// The graph the writes to `db` follow: the linked types' ([`graph`]), and
/// once `db`'s stored schema is obeyed (`schema::obey`, or the first write's
/// lease), the collections and rules other programs published there. Each
/// database of each deployment has its own: rules published in one never
/// run in another.
pub fn of(db: &mongodb::Database) -> &'static Graph {
    match crate::kept::of_database::<Installed>(db).0.read().map(|g| *g) {
        Ok(Some(g)) => g,
        _ => graph(),
    }
}

/// The graph with stored-only types of one database, once its stored
/// schema is obeyed.
#[derive(Default)]
struct Installed(std::sync::RwLock<Option<&'static Graph>>);

/// Makes the graph of `db` that of the linked types and `stored`:
/// descriptors of collections no linked type declares, and of the rules a
/// linked collection's types do not declare, which their writes follow as
/// their own ([`Graph::relations_of`]). The previous graph stays valid: a
/// write that started with it finishes with it, and graphs live for the
/// process (one per stored-schema change).
pub(crate) fn install(
    db: &mongodb::Database,
    stored: Vec<&'static Schema>,
    moves: Vec<super::stored::moves_state::ActiveMove>,
    (bounds, adopted, building): super::stored::transitions::Rules,
) {
    let mut g = Graph::build(schemas().chain(stored.iter().copied()));
    (g.moves, g.bounds, g.adopted, g.building) = (moves, bounds, adopted, building);
    for s in stored.into_iter().filter(|s| schemas().any(|linked| linked.collection == s.collection)) {
        g.supplements.entry(s.collection).or_default().push(s);
    }
    let g: &'static Graph = Box::leak(Box::new(g));
    if let Ok(mut current) = crate::kept::of_database::<Installed>(db).0.write() {
        *current = Some(g);
    }
}

/// Every document type of the graph of `db`: see [`Graph::types`].
pub fn all_types(db: &mongodb::Database) -> Vec<&'static Schema> {
    of(db).types()
}

/// Whether one of two stored paths is the other or lies inside it (`parts`
/// and `parts.name`). The store's path helpers sit above the schema, which
/// needs only this.
fn same_or_nested(a: &str, b: &str) -> bool {
    let within = |inner: &str, outer: &str| inner.strip_prefix(outer).is_some_and(|rest| rest.starts_with('.'));
    a == b || within(a, b) || within(b, a)
}

/// The address of a descriptor: one per Rust type.
fn key<T>(item: &'static T) -> usize {
    item as *const T as usize
}

impl Graph {
    /// Builds the graph of a set of schemas (the registry's, for [`graph`]).
    pub fn build(all: impl IntoIterator<Item = &'static Schema>) -> Graph {
        let all: Vec<&'static Schema> = all.into_iter().collect();
        let mut g = Graph::default();
        for s in &all {
            g.by_collection.entry(s.collection).or_default().push(s);
        }
        for list in g.by_collection.values_mut() {
            list.sort_by_key(|s| (s.rust_name, s.module));
        }
        for s in &all {
            g.add_copies(s);
            for rel in s.relations.iter().chain(element_relations(s)) {
                if rel.is_reference() {
                    if let Some(target) = rel.target {
                        g.references.entry(target).or_default().push((s, rel));
                    }
                }
            }
        }
        for s in &all {
            for rel in s.relations {
                g.add_subset(s, rel);
                if let Some(found) = g.find_inverse(rel) {
                    g.inverses.insert(key(rel), found);
                }
            }
        }
        g.link_chains();
        let sources: Vec<&'static str> = g.targets.keys().chain(g.subsets.keys()).copied().collect();
        for source in sources {
            let derived = g.compute_derived(source);
            g.derived.insert(source, derived);
        }
        g
    }

    fn add_copies(&mut self, schema: &'static Schema) {
        let held = self.held.entry(key(schema)).or_default();
        let mut add = |source: &'static str, shape: Shape, field: &'static str, source_field: &'static str| {
            if !held.contains(&(source, shape)) {
                held.push((source, shape));
            }
            let targets = self.targets.entry(source).or_default();
            match targets.iter_mut().find(|t| t.collection == schema.collection && t.shape == shape) {
                Some(t) if !t.fields.contains(&(field, source_field)) => t.fields.push((field, source_field)),
                Some(_) => {}
                None => targets.push(Target::new(schema.collection, shape, vec![(field, source_field)])),
            }
        };
        for copy in schema.copies {
            add(copy.source, Shape::Top { via: copy.via }, copy.field, copy.source_field);
        }
        for rel in schema.relations.iter().chain(element_relations(schema)) {
            if let RelationKind::RefMany { key: Some(key), .. } = rel.kind {
                for copy in rel.copies {
                    add(copy.source, Shape::Array { array: rel.field, key }, copy.field, copy.source_field);
                }
            }
        }
    }

    fn add_subset(&mut self, parent: &'static Schema, rel: &'static Relation) {
        let (Some(spec), RelationKind::Embed { max: Some(max), .. }) = (&rel.subset, rel.kind) else { return };
        // The child names its parent through a parent (or single) reference.
        let parent_field = self.types_of(spec.child).iter().find_map(|c| {
            c.relations.iter().find_map(|r| {
                let leads_back = r.target == Some(parent.collection)
                    && matches!(r.kind, RelationKind::ParentRef | RelationKind::RefOne { .. });
                leads_back.then_some(r.field)
            })
        });
        if let Some(parent_field) = parent_field {
            self.subsets.entry(spec.child).or_default().push(SubsetTarget {
                parent: parent.collection,
                rel,
                spec,
                parent_field,
                max,
            });
        }
    }

    /// Records, on every target, what is derived from the copies it writes:
    /// the targets of its holders' collection whose source fields are among
    /// those copies, and the subsets summarizing its holders whose summaries
    /// carry one of them (a subset of whole documents carries all).
    fn link_chains(&mut self) {
        let mut links: Vec<(&'static str, usize, Carried)> = Vec::new();
        for (source, targets) in &self.targets {
            for (i, target) in targets.iter().enumerate() {
                let paths = target.copy_paths();
                let carries = |field: &str| paths.iter().any(|p| same_or_nested(field, p));
                let copies = self.targets_of(target.collection).iter().enumerate();
                let copies = copies.filter(|(_, t)| t.source_fields().any(carries)).map(|(j, _)| j).collect();
                let summaries = self.subsets_of(target.collection).iter().enumerate();
                let summaries = summaries
                    .filter(|(_, s)| s.fields().is_none_or(|fields| fields.iter().any(|f| carries(f))))
                    .map(|(j, _)| j)
                    .collect();
                links.push((source, i, Carried { copies, summaries }));
            }
        }
        for (source, i, carried) in links {
            if let Some(target) = self.targets.get_mut(source).and_then(|t| t.get_mut(i)) {
                target.carried = carried;
            }
        }
    }

    /// The relation a two-way reference names as its inverse: on the type
    /// the reference names (by its Rust name), else on any type stored in
    /// the target collection.
    fn find_inverse(&self, rel: &'static Relation) -> Option<(&'static Schema, &'static Relation)> {
        let (Some(target), Some(inverse)) = (rel.target, rel.inverse) else { return None };
        let types = self.types_of(target);
        let named = types.iter().filter(|s| Some(s.rust_name) == rel.target_type);
        named.chain(types.iter()).find_map(|s| s.relation(inverse).map(|r| (*s, r)))
    }

    fn compute_derived(&self, source: &str) -> Option<Vec<&'static str>> {
        let mut out: Vec<&'static str> = self.targets_of(source).iter().flat_map(Target::source_fields).collect();
        for subset in self.subsets_of(source) {
            out.extend(subset.fields()?);
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    /// Every target path of copies whose source is stored in `source`.
    pub fn targets_of(&self, source: &str) -> &[Target] {
        self.targets.get(source).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The targets whose copies are made from the copies `target` writes
    /// (a copy of a copy): their sources are `target`'s holders.
    pub fn copies_of_copies<'g>(&'g self, target: &'g Target) -> impl Iterator<Item = &'g Target> + 'g {
        let targets = self.targets_of(target.collection);
        target.carried.copies.iter().filter_map(move |i| targets.get(*i))
    }

    /// The subsets whose summaries carry the copies `target` writes: they
    /// summarize `target`'s holders.
    pub fn summaries_of_copies<'g>(&'g self, target: &'g Target) -> impl Iterator<Item = &'g SubsetTarget> + 'g {
        let subsets = self.subsets_of(target.collection);
        target.carried.summaries.iter().filter_map(move |i| subsets.get(*i))
    }

    /// Every target reached from `source`'s through copies of copies, in
    /// the order a change travels (its own first), each once: what a change
    /// of `source` may rewrite, and what its verify scans.
    pub fn chain_of(&self, source: &str) -> Vec<(&'static str, &Target)> {
        let mut out: Vec<(&'static str, &Target)> = Vec::new();
        let Some((&source, _)) = self.targets.get_key_value(source) else { return out };
        out.extend(self.targets_of(source).iter().map(|t| (source, t)));
        let mut i = 0;
        while i < out.len() {
            let holder = out[i].1;
            for next in self.copies_of_copies(holder) {
                if !out.iter().any(|(_, t)| std::ptr::eq(*t, next)) {
                    out.push((holder.collection, next));
                }
            }
            i += 1;
        }
        out
    }

    /// Every subset summarizing documents of `child`.
    pub fn subsets_of(&self, child: &str) -> &[SubsetTarget] {
        self.subsets.get(child).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Whether anything is derived from documents of `source`: copies
    /// elsewhere, or summaries in a parent's subset.
    pub fn has_derived(&self, source: &str) -> bool {
        self.derived.contains_key(source)
    }

    /// The fields of `source` something is derived from, sorted; `None`
    /// when a subset summarizes whole documents (every field matters), and
    /// empty when nothing is derived from it.
    pub fn derived_fields(&self, source: &str) -> Option<&[&'static str]> {
        match self.derived.get(source) {
            Some(fields) => fields.as_deref(),
            None => Some(&[]),
        }
    }

    /// The source fields of `source` that some target copies, sorted.
    pub fn copied_fields(&self, source: &str) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = self.targets_of(source).iter().flat_map(Target::source_fields).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The stored rules of `schema`'s collection that it does not declare
    /// (another program's, obeyed): a type of their own, whose rules the
    /// writes of `schema` follow too.
    fn supplements_of(&self, schema: &'static Schema) -> impl Iterator<Item = &'static Schema> + '_ {
        let all = self.supplements.get(schema.collection).into_iter().flatten().copied();
        all.filter(move |s| !std::ptr::eq(*s, schema))
    }

    /// Every relation a write of `schema` follows: its own, then the stored
    /// ones of its collection it does not declare (`schema::obey`), so a
    /// program keeps another's two-way references, subsets and copies on
    /// fields it declares plain. Only its own for a compiled-only program.
    pub fn relations_of(&self, schema: &'static Schema) -> impl Iterator<Item = &'static Relation> + '_ {
        let stored = self.supplements_of(schema).flat_map(|s| s.relations.iter());
        schema.relations.iter().chain(stored.filter(move |r| schema.relation(r.field).is_none()))
    }

    /// Whether documents of this type hold copies to fill on insert (its
    /// own, or the stored rules of its collection it follows).
    pub fn holds_copies(&self, schema: &'static Schema) -> bool {
        std::iter::once(schema).chain(self.supplements_of(schema)).any(|s| {
            let in_elements = |r: &Relation| r.elements.iter().any(|e| !e.copies.is_empty());
            !s.copies.is_empty() || s.relations.iter().any(|r| !r.copies.is_empty() || in_elements(r))
        })
    }

    /// The target paths documents of this type hold copies in, with the
    /// source collection of each (with those of the stored rules of its
    /// collection it follows).
    pub fn held_by(&self, schema: &'static Schema) -> Vec<(&'static str, &Target)> {
        let held = std::iter::once(schema).chain(self.supplements_of(schema)).filter_map(|s| self.held.get(&key(s)));
        let mut out: Vec<(&'static str, &Target)> = Vec::new();
        for (source, shape) in held.flatten() {
            let found = self.targets_of(source).iter().find(|t| t.collection == schema.collection && t.shape == *shape);
            // A supplement's copies may share a target with the type's own.
            if let Some(target) = found.filter(|t| !out.iter().any(|(_, o)| std::ptr::eq(*o, *t))) {
                out.push((source, target));
            }
        }
        out
    }

    /// The two-way references a type declares, or follows from the stored
    /// schema (those whose inverse exists).
    pub fn two_way_of(&self, schema: &'static Schema) -> Vec<&'static Relation> {
        self.two_way_iter(schema).collect()
    }

    /// [`Graph::two_way_of`] without collecting it.
    pub(crate) fn two_way_iter(&self, schema: &'static Schema) -> impl Iterator<Item = &'static Relation> + '_ {
        self.relations_of(schema).filter(|r| r.inverse.is_some() && self.inverse_of(r).is_some())
    }

    /// The subsets a type keeps, as parent (also those it follows from
    /// the stored schema).
    pub fn subsets_kept_by(&self, schema: &'static Schema) -> Vec<&SubsetTarget> {
        self.relations_of(schema)
            .filter(|r| r.subset.is_some())
            .filter_map(|r| self.subsets.values().flatten().find(|t| t.is_kept_in(schema.collection, r)))
            .collect()
    }

    /// Every reference, from any document type, whose target is `collection`,
    /// with the schema declaring it.
    pub fn references_to(&self, collection: &str) -> &[(&'static Schema, &'static Relation)] {
        self.references.get(collection).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The other side of a two-way reference, with the type declaring it.
    pub fn inverse_of(&self, rel: &'static Relation) -> Option<(&'static Schema, &'static Relation)> {
        self.inverses.get(&key(rel)).copied()
    }

    /// The document types stored in `collection`, by Rust name.
    pub fn types_of(&self, collection: &str) -> &[&'static Schema] {
        self.by_collection.get(collection).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every document type of the graph (linked, and followed from a stored
    /// schema), ordered by collection then type name: what the admin tool
    /// reports, verifies and repairs.
    pub fn types(&self) -> Vec<&'static Schema> {
        let mut all: Vec<&'static Schema> = self.by_collection.values().flatten().copied().collect();
        all.sort_by_key(|s| (s.collection, s.rust_name, s.module));
        all
    }

    /// Collections that more than one document type declares, with the
    /// types: their documents are one set, so a copy or reference declared
    /// on either applies to all of them.
    pub fn shared_collections(&self) -> Vec<(&'static str, &[&'static Schema])> {
        let mut out: Vec<_> =
            self.by_collection.iter().filter(|(_, v)| v.len() > 1).map(|(c, v)| (*c, v.as_slice())).collect();
        out.sort_by_key(|(c, _)| *c);
        out
    }

    /// Every collection whose documents some parent's subset summarizes,
    /// sorted: what a change-stream follower must watch, besides the
    /// sources of copies, to keep subsets true when children are written
    /// without docrel's synchronous hooks.
    pub fn subset_children(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = self.subsets.keys().copied().collect();
        out.sort_unstable();
        out
    }

    /// Every collection that is the source of copies or summaries, sorted.
    pub fn sources(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = self.targets.keys().copied().collect();
        out.sort_unstable();
        out
    }
}
