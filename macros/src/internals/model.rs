//! The validated models the derives generate from. `check` builds them from
//! the parsed attributes, resolving every fact once: stored names after
//! serde's renames, relation kinds and targets, keys and sorts as stored
//! names, bucket fields, bounds, copies and advice. `expand` reads these and
//! never the attributes.

use super::advice::Advice;
use super::ast;
use super::index_values::{CollationDecl, PartialDecl};
use super::ty;
use syn::{Ident, Path, Type, Visibility};

/// A `#[derive(Document)]` struct that passed every check.
pub struct Model<'a> {
    pub ident: &'a Ident,
    pub vis: &'a Visibility,
    /// `#[document(crate = "..")]`: the path of the `docrel` crate.
    pub krate: Option<Path>,
    /// The names of the generated handle types (`PartFields`, `PartRels`),
    /// unless the struct mentions them itself.
    pub names: Names,
    pub collection: String,
    /// The `_id` field.
    pub id: IdField<'a>,
    /// The stored fields, in declaration order.
    pub fields: Vec<ModelField<'a>>,
    /// The relationships, in declaration order (the schema's order).
    pub relations: Vec<ModelRelation<'a>>,
    /// The top-level denormalized copies.
    pub copies: Vec<ModelCopy<'a>>,
    pub advice: Vec<Advice>,
    /// The stored names of the shard key, in order; empty when none.
    pub shard_key: Vec<String>,
    /// The declared indexes: the fields' (`#[document(index)]`, `unique`),
    /// the struct's `index(..)`, then the text index of `#[document(text)]`.
    pub indexes: Vec<ModelIndex<'a>>,
    /// `#[document(moved_from = Post::comments)]`.
    pub moved: Option<ModelMove>,
    /// `#[embed(moved_from = "addresses")]` on one of its fields.
    pub embedded_from: Option<ModelEmbedded>,
}

/// A declared index, its keys resolved to stored paths.
pub struct ModelIndex<'a> {
    /// The `index` word (or the field's `unique`), for errors.
    pub span: proc_macro2::Span,
    /// The field it is declared on, for a field's own index.
    pub field: Option<&'a Ident>,
    /// The keys before any text key, with `1` or `-1`.
    pub keys: Vec<(String, i32)>,
    /// The text keys and their weights.
    pub text: Vec<(String, u32)>,
    pub name: Option<String>,
    pub unique: bool,
    pub sparse: bool,
    /// Seconds.
    pub expire_after: Option<u64>,
    pub partial: Option<PartialDecl>,
    pub collation: Option<CollationDecl>,
    pub default_language: Option<String>,
    pub language_override: Option<String>,
}

pub struct IdField<'a> {
    pub ident: &'a Ident,
    /// The id type: the field's, or `T` of an `Option<T>` field.
    pub ty: &'a Type,
    /// Whether the field is an `Option`, filled with a generated id on insert.
    pub optional: bool,
}

impl<'a> IdField<'a> {
    /// The id field `ident` of the type `ty` as written.
    pub fn new(ident: &'a Ident, ty: &'a Type) -> Self {
        match super::ty::option_inner(ty) {
            Some(inner) => IdField { ident, ty: inner, optional: true },
            None => IdField { ident, ty, optional: false },
        }
    }
}

/// A field serde stores on its own (not skipped, not flattened).
pub struct ModelField<'a> {
    pub ident: &'a Ident,
    /// The field's visibility: its handle is no more visible.
    pub vis: &'a Visibility,
    pub ty: &'a Type,
    /// The type as written, for the schema report.
    pub type_name: String,
    /// The stored name, after `rename` and `rename_all`.
    pub stored: String,
    /// The declared bound of an array (`#[embed(max)]`, `#[reference(many, max)]`).
    pub bound: Option<u32>,
    /// Rule 3's threshold on the array (`warn_above`, or the default).
    pub warn_above: Option<u32>,
    /// The array is an `Option<Vec<T>>`: its bound holds when it is there.
    pub optional_array: bool,
    /// `#[document(write_heavy)]`.
    pub write_heavy: bool,
}

impl<'a> ModelField<'a> {
    /// The field as stored; `None` when serde does not store it on its own.
    pub fn new(f: &'a ast::Field<'a>) -> Option<Self> {
        let stored = f.stored.clone()?;
        Some(ModelField {
            ident: f.ident,
            vis: f.vis,
            ty: f.ty,
            type_name: ty::type_name(f.ty),
            stored,
            bound: f.bound(),
            warn_above: super::advice::threshold(f),
            optional_array: ty::array_element(f.ty).is_some_and(|(_, optional)| optional),
            write_heavy: f.doc.write_heavy.is_present(),
        })
    }
}

/// A stored name. The derive knows its own type's; another type's (the child
/// of a subset, the element struct of a reference array) is read from that
/// type's derive, at compile time.
#[derive(Clone)]
pub enum StoredName<'a> {
    /// A field of this type, after serde's renames.
    Here(String),
    /// A field of another document, named by its stored name or else its
    /// Rust name (`_id` or `id`), as written at `span`: its stored name is
    /// looked up in that document's `__DOCREL_LINKS` when compiled.
    OfDocument { doc: Path, name: String, span: proc_macro2::Span },
    /// A field of an element struct, from its `#[derive(Embedded)]`.
    OfElement { elem: &'a Type, field: Ident },
}

/// One key of a declared order: `-published_date` is descending.
pub struct SortKey<'a> {
    pub name: StoredName<'a>,
    /// `1` ascending, `-1` descending.
    pub direction: i32,
}

/// The document type a relationship leads to.
pub struct Target {
    pub path: Path,
    /// Its name as written, for the schema report.
    pub name: String,
}

impl Target {
    pub fn new(path: &Path) -> Self {
        Target { path: path.clone(), name: ty::path_name(path) }
    }
}

/// A relationship on a stored field.
pub struct ModelRelation<'a> {
    pub ident: &'a Ident,
    /// The field's type as written: what a loader's parent must carry.
    pub ty: &'a Type,
    pub stored: String,
    pub on_delete: OnDelete,
    pub kind: RelationKind<'a>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OnDelete {
    Nothing,
    Pull,
    Cascade,
    Restrict,
}

pub enum RelationKind<'a> {
    /// `#[embed]`: one struct, or an array (`many`), maybe a subset.
    Embed { many: bool, max: Option<u32>, subset: Option<Subset<'a>> },
    /// `#[reference(many, to = T)]` on `Vec<..>` or `Option<Vec<..>>` (`optional`).
    RefMany { to: Target, max: Option<u32>, element: Element<'a>, optional: bool, inverse: Option<&'a Ident> },
    /// `#[reference(to = T)]` on `Id` or `Option<Id>`; `id` is the id type as written.
    RefOne { to: Target, optional: bool, id: &'a Type, inverse: Option<&'a Ident> },
    /// `#[parent_ref(to = P)]` on `Id` or `Option<Id>`, with its declared order.
    ParentRef { to: Target, optional: bool, id: &'a Type, order: Vec<SortKey<'a>> },
    /// `#[bucket(..)]`: the array of a bucket document.
    Bucket(Bucket<'a>),
}

/// What a reference array holds.
pub enum Element<'a> {
    /// The ids themselves (`Vec<ObjectId>`), of type `ty`.
    Ids { ty: &'a Type },
    /// `{id, ..}` structs (`#[derive(Embedded)]`): `key` is the field holding
    /// the id (`id` unless `key = ..` says otherwise).
    Structs { ty: &'a Type, key: Ident },
}

impl Element<'_> {
    /// The stored name of the field holding the id in each element.
    pub fn key(&self) -> Option<StoredName<'_>> {
        match self {
            Element::Ids { .. } => None,
            Element::Structs { ty, key } => Some(StoredName::OfElement { elem: ty, field: key.clone() }),
        }
    }
}

/// The subset pattern: the array keeps summaries of the N first children in
/// `sort` order (or the N last).
pub struct Subset<'a> {
    pub child: Target,
    /// The summary type, a `View` of the child.
    pub elem: &'a Type,
    /// The summary type as written, for the errors about what it holds.
    pub elem_name: String,
    /// Stored names of the child.
    pub sort: Vec<SortKey<'a>>,
    pub keep_last: bool,
    /// The child field identifying a summary.
    pub key: Option<StoredName<'a>>,
    pub max_bytes: Option<u32>,
}

/// The bucket pattern: elements in bucket documents of one parent.
pub struct Bucket<'a> {
    /// The parent type, from the bucket's `#[parent_ref(to = ..)]`.
    pub parent: Path,
    /// The element type.
    pub elem: &'a Type,
    /// Stored names of the bucket document's fields.
    pub parent_field: String,
    pub count: String,
    pub page: String,
    pub start: String,
    pub size: Option<u32>,
    pub window_ms: Option<i64>,
    /// The element's `DateTime` field a time bucket is keyed by (`by = time`).
    pub by: Option<&'a Ident>,
    pub max_bytes: Option<u32>,
    /// A counter bucket (`#[bucket(counter, ..)]` on the count field): no
    /// elements, a count and maybe a sum per window.
    pub counter: Option<Counter<'a>>,
}

/// A counter bucket's sum: the stored name and type of the field that
/// adds each event's amount.
pub struct Counter<'a> {
    pub sum: Option<(String, &'a Type)>,
}

/// A field that copies a field of another document:
/// `#[denormalize(from = Part::name)]`.
pub struct Copied<'a> {
    /// The copy field.
    pub ident: &'a Ident,
    pub ty: &'a Type,
    pub stored: String,
    pub source: Target,
    pub source_field: Ident,
}

/// A top-level copy, with the single reference leading to its source:
/// `#[denormalize(from = Product::name, via = product)]`.
pub struct ModelCopy<'a> {
    pub copied: Copied<'a>,
    pub via: Via<'a>,
}

pub struct Via<'a> {
    /// As written after `via =`.
    pub ident: &'a Ident,
    /// The stored name of the reference.
    pub stored: String,
    /// The document type it refers to.
    pub to: Path,
}

/// A `#[derive(Embedded)]` element struct: of a reference array, whose
/// copies come from the document its key refers to, or of an embedded
/// array, whose elements may hold references of their own.
pub struct EmbeddedModel<'a> {
    pub ident: &'a Ident,
    pub vis: &'a Visibility,
    pub krate: Option<Path>,
    pub fields: Vec<ModelField<'a>>,
    /// Fields that copy a field of the referred document.
    pub copies: Vec<Copied<'a>>,
    /// The references the element holds (`#[reference(to = User)]`).
    pub refs: Vec<ElementRef<'a>>,
    /// The name of the handles struct of `refs` (`CommentRefs`).
    pub refs_name: Ident,
    pub advice: Vec<Advice>,
}

/// A single reference on a field of an element struct, with the copies
/// made through it (`#[denormalize(from = User::name, via = author)]`).
pub struct ElementRef<'a> {
    pub ident: &'a Ident,
    pub stored: String,
    pub to: Target,
    /// The id type as written (`T` of an `Option<T>`).
    pub id: &'a Type,
    pub optional: bool,
    pub on_delete: OnDelete,
    /// Each copy with the `via` it was declared with.
    pub copies: Vec<(Copied<'a>, &'a Ident)>,
}

/// A `#[derive(View)]` struct.
pub struct ViewModel<'a> {
    pub ident: &'a Ident,
    pub krate: Option<Path>,
    pub of: Path,
    pub fields: Vec<ModelField<'a>>,
}

/// What the fallback after an error emits: the items other code refers to.
pub struct Stub<'a> {
    pub ident: &'a Ident,
    pub vis: &'a Visibility,
    pub krate: Option<Path>,
    pub names: Names,
    /// The type of the field most likely meant as the `_id`, if any.
    pub id_ty: Option<&'a Type>,
    pub fields: Vec<ModelField<'a>>,
}

/// The names of the handle types a document's derive generates. They live
/// inside the derive's `const _` block, so they never clash with a type of
/// the user's module; inside that block they would hide a user type of the
/// same name, so a struct that mentions `PartFields` gets `__DocrelPartFields`.
pub struct Names {
    pub fields: Ident,
    pub rels: Ident,
}

impl Names {
    pub fn new(input: &syn::DeriveInput) -> Self {
        // The input as one string, searched for the names as words: one
        // call into the compiler, where walking the tokens would make one
        // per identifier. A name that appears only inside a literal or a
        // doc comment is taken as mentioned too, which costs nothing but
        // the prefix.
        let text = quote::ToTokens::to_token_stream(input).to_string();
        let name = |suffix: &str| {
            let plain = format!("{}{suffix}", input.ident);
            let name = if mentions(&text, &plain) { format!("__Docrel{plain}") } else { plain };
            Ident::new(&name, input.ident.span())
        };
        Names { fields: name("Fields"), rels: name("Rels") }
    }

    /// The name of an element struct's reference handles (`CommentRefs`),
    /// prefixed like the others when the struct mentions it.
    pub fn refs(input: &syn::DeriveInput) -> Ident {
        let text = quote::ToTokens::to_token_stream(input).to_string();
        let plain = format!("{}Refs", input.ident);
        let name = if mentions(&text, &plain) { format!("__Docrel{plain}") } else { plain };
        Ident::new(&name, input.ident.span())
    }
}

/// Whether `word` appears in `text` as a whole identifier.
fn mentions(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(is_ident)
            && !text[at + word.len()..].chars().next().is_some_and(is_ident)
    })
}

impl<'a> ModelRelation<'a> {
    /// The element type of an embedded array that is no subset: its
    /// elements may hold references (`comments[].author`).
    pub fn embedded_element(&self) -> Option<&'a Type> {
        match self.kind {
            RelationKind::Embed { many: true, subset: None, .. } => ty::array_element(self.ty).map(|(e, _)| e),
            _ => None,
        }
    }
}

impl RelationKind<'_> {
    /// A reference that loaders read (an array, a single one, a parent reference).
    pub fn is_reference(&self) -> bool {
        matches!(self, RelationKind::RefMany { .. } | RelationKind::RefOne { .. } | RelationKind::ParentRef { .. })
    }

    /// A single reference that may be absent (`Option<Id>`).
    pub fn optional(&self) -> bool {
        matches!(self, RelationKind::RefOne { optional: true, .. } | RelationKind::ParentRef { optional: true, .. })
    }

    /// The document type a reference leads to.
    pub fn target(&self) -> Option<&Target> {
        match self {
            RelationKind::RefMany { to, .. } | RelationKind::RefOne { to, .. } | RelationKind::ParentRef { to, .. } => {
                Some(to)
            }
            RelationKind::Embed { .. } | RelationKind::Bucket(_) => None,
        }
    }

    /// The field of the target that mirrors this one (two-way references).
    pub fn inverse(&self) -> Option<(&Target, &Ident)> {
        match self {
            RelationKind::RefMany { to, inverse: Some(inverse), .. }
            | RelationKind::RefOne { to, inverse: Some(inverse), .. } => Some((to, inverse)),
            _ => None,
        }
    }
}

/// A field that was, in the old version, the one document of another
/// collection referring to this one (`#[embed(moved_from = "addresses")]`).
pub struct ModelEmbedded {
    /// The old collection.
    pub collection: String,
    /// The field's Rust name.
    pub rust_field: String,
}

/// A validated move into this type's collection.
pub struct ModelMove {
    /// The type whose array held these documents (`Post`).
    pub from: Target,
    /// That array's Rust field name in the old version (`comments`).
    pub from_field: String,
    /// The stored name of this type's `#[parent_ref(to = Post)]` field, which
    /// the move fills with the old parent's `_id`.
    pub parent_field: String,
    /// The bucket fields, when this type is a bucket document by count.
    pub buckets: Option<ModelBuckets>,
}

/// The stored names of a bucket document's array, page and count, and its
/// size: where a move into buckets puts the elements.
pub struct ModelBuckets {
    pub field: String,
    pub page: String,
    pub count: String,
    pub size: u32,
    /// Time buckets: the window start's stored name, the window in
    /// milliseconds, and the element field the window is of.
    pub time: Option<(String, i64, String)>,
}
