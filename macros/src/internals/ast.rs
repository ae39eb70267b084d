//! The struct as written: each field with its stored name and its role,
//! parsed from the attributes, spans kept for every diagnostic. `check`
//! validates it into the model the generation reads (`model.rs`).

use super::attr::{
    BucketAttr, ContainerAttr, DenormalizeAttr, EmbedAttr, EmbeddedAttr, FieldDocAttr, ParentRefAttr, ReferenceAttr,
    ViewAttr,
};
use super::ctxt::Ctxt;
use super::serde_names;
use super::symbol::{BUCKET, DENORMALIZE, DOCUMENT, EMBED, EMBEDDED, PARENT_REF, REFERENCE, RELATIONSHIP_ATTRS, VIEW};
use super::ty::array_element;
use darling::FromMeta;
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, DeriveInput, Ident, Type, Visibility};

pub struct Container<'a> {
    pub input: &'a DeriveInput,
    pub ident: &'a Ident,
    pub vis: &'a Visibility,
    pub attr: ContainerAttr,
    /// A `#[document(..)]` on the struct failed to parse (its error is
    /// reported): say nothing more about what it would have said.
    pub attr_failed: bool,
    pub fields: Vec<Field<'a>>,
}

pub struct Field<'a> {
    pub ident: &'a Ident,
    /// As declared: what is generated for the field is no more visible.
    pub vis: &'a syn::Visibility,
    pub ty: &'a Type,
    /// The stored name, or `None` when serde does not store it on its own.
    pub stored: Option<String>,
    pub doc: FieldDocAttr,
    pub role: Role,
    /// `#[denormalize(..)]`: this field copies a field of another document.
    pub copy: Option<Copy>,
}

/// A denormalized copy, as declared.
pub struct Copy {
    pub attr: DenormalizeAttr,
    pub span: Span,
}

impl Copy {
    /// `Part` and `name` of `from = Part::name`.
    pub fn source(&self) -> Option<(syn::Path, &Ident)> {
        let from = self.attr.from.as_ref()?;
        let field = &from.segments.last()?.ident;
        let mut ty = from.clone();
        ty.segments.pop();
        ty.segments.pop_punct();
        (!ty.segments.is_empty()).then_some((ty, field))
    }
}

pub enum Role {
    Plain,
    Embed { attr: EmbedAttr, span: Span },
    Reference { attr: ReferenceAttr, span: Span },
    ParentRef { attr: ParentRefAttr, span: Span },
    Bucket { attr: BucketAttr, span: Span },
}

impl Role {
    pub fn span(&self) -> Option<Span> {
        match self {
            Role::Plain => None,
            Role::Embed { span, .. }
            | Role::Reference { span, .. }
            | Role::ParentRef { span, .. }
            | Role::Bucket { span, .. } => Some(*span),
        }
    }
}

/// Parses `attr` with darling; a bare `#[name]` is the all-default value.
fn parse_attr<T: FromMeta + Default>(attr: &Attribute) -> darling::Result<T> {
    match &attr.meta {
        syn::Meta::Path(_) => Ok(T::default()),
        meta => T::from_meta(meta),
    }
}

fn parse_required<T: FromMeta>(attr: &Attribute, example: &str) -> darling::Result<T> {
    match &attr.meta {
        syn::Meta::Path(_) => Err(darling::Error::custom(format!(
            "`#[{}]` needs its target: the correct format looks like `{example}`",
            attr.path().get_ident().map(ToString::to_string).unwrap_or_default()
        ))
        .with_span(attr.path())),
        meta => T::from_meta(meta).map_err(|e| e.with_span(attr.path())),
    }
}

impl<'a> Container<'a> {
    /// Reads the struct; `None` when its shape cannot be a document (the
    /// error is in `cx`).
    pub fn from_ast(input: &'a DeriveInput, derive: &str, cx: &Ctxt) -> Option<Self> {
        let named = match &input.data {
            syn::Data::Struct(syn::DataStruct { fields: syn::Fields::Named(named), .. }) => named,
            syn::Data::Struct(s) => {
                cx.push(
                    darling::Error::custom(format!(
                        "#[derive({derive})] needs a struct with named fields: a document is stored as \
                         `{{field: value}}`, so give each field a name (`struct Part {{ id: ObjectId, name: String }}`)"
                    ))
                    // A unit struct has no field tokens: its name, then.
                    .with_span(&match &s.fields {
                        syn::Fields::Unit => input.ident.span(),
                        fields => syn::spanned::Spanned::span(fields),
                    }),
                );
                return None;
            }
            syn::Data::Enum(e) => {
                cx.push(
                    darling::Error::custom(format!(
                        "#[derive({derive})] needs a struct with named fields, not an enum: wrap the enum in a \
                         field of a struct (`struct Event {{ id: ObjectId, kind: Kind }}`)"
                    ))
                    .with_span(&e.enum_token),
                );
                return None;
            }
            syn::Data::Union(u) => {
                cx.push(
                    darling::Error::custom(format!(
                        "#[derive({derive})] needs a struct with named fields, not a union"
                    ))
                    .with_span(&u.union_token),
                );
                return None;
            }
        };
        if !input.generics.params.is_empty() {
            cx.push(
                darling::Error::custom(format!(
                    "#[derive({derive})] does not support generic structs: a document type maps to one collection \
                     and one stored shape; write a concrete struct"
                ))
                .with_span(&input.generics),
            );
            return None;
        }
        let serde_container = cx.handle(serde_names::container(&input.attrs).map_err(Into::into)).unwrap_or_default();

        let (attr, attr_failed) = container_attr(input, derive, cx);
        let fields =
            named.named.iter().filter_map(|f| Field::from_ast(f, serde_container.rename_all.as_deref(), cx)).collect();
        Some(Container { input, ident: &input.ident, vis: &input.vis, attr, attr_failed, fields })
    }
}

/// The container attribute of `derive`: `#[document(..)]` of a document,
/// `#[embedded(crate = ..)]` of an element struct (a view's is read by
/// `view_of`); and whether one of them failed to parse.
fn container_attr(input: &DeriveInput, derive: &str, cx: &Ctxt) -> (ContainerAttr, bool) {
    let mut attr = ContainerAttr::default();
    let mut failed = false;
    let name = match derive {
        "Document" => DOCUMENT,
        "Embedded" => EMBEDDED,
        _ => return (attr, failed),
    };
    for a in input.attrs.iter().filter(|a| a.path().is_ident(name)) {
        let parsed = if derive == "Document" {
            cx.handle(parse_attr::<ContainerAttr>(a))
        } else {
            cx.handle(parse_attr::<EmbeddedAttr>(a)).map(|e| ContainerAttr { krate: e.krate, ..Default::default() })
        };
        let Some(parsed) = parsed else {
            failed = true;
            continue;
        };
        if parsed.collection.is_some() {
            if attr.collection.is_some() {
                cx.push(darling::Error::duplicate_field("collection").with_span(a));
            }
            attr.collection = parsed.collection;
        }
        if parsed.krate.is_some() {
            attr.krate = parsed.krate;
        }
        if parsed.shard_key.is_some() {
            if attr.shard_key.is_some() {
                cx.push(darling::Error::duplicate_field("shard_key").with_span(a));
            }
            attr.shard_key = parsed.shard_key;
        }
        if parsed.moved_from.is_some() {
            if attr.moved_from.is_some() {
                cx.push(darling::Error::duplicate_field("moved_from").with_span(a));
            }
            attr.moved_from = parsed.moved_from;
        }
        attr.index.extend(parsed.index);
    }
    (attr, failed)
}

impl<'a> Field<'a> {
    fn from_ast(f: &'a syn::Field, rename_all: Option<&str>, cx: &Ctxt) -> Option<Self> {
        let ident = f.ident.as_ref()?;
        let serde = cx.handle(serde_names::field(&f.attrs).map_err(Into::into)).unwrap_or_default();
        let rust_name = ident.to_string();
        let rust_name = rust_name.strip_prefix("r#").unwrap_or(&rust_name).to_owned();
        let stored = if serde.not_stored {
            None
        } else {
            Some(serde.rename.clone().unwrap_or_else(|| {
                rename_all.and_then(|rule| serde_names::apply_rename_all(rule, &rust_name)).unwrap_or(rust_name)
            }))
        };

        let mut doc = FieldDocAttr::default();
        for a in f.attrs.iter().filter(|a| a.path().is_ident(DOCUMENT)) {
            if let Some(parsed) = cx.handle(parse_attr::<FieldDocAttr>(a)) {
                doc.id = if parsed.id.is_present() { parsed.id } else { doc.id };
                doc.index = parsed.index.or(doc.index);
                doc.unique = if parsed.unique.is_present() { parsed.unique } else { doc.unique };
                doc.text = parsed.text.or(doc.text);
                doc.write_heavy = if parsed.write_heavy.is_present() { parsed.write_heavy } else { doc.write_heavy };
            }
        }

        let role = parse_role(f, cx);
        let copy = parse_copy(f, ident, cx);
        Some(Field { ident, vis: &f.vis, ty: &f.ty, stored, doc, role, copy })
    }

    /// The declared bound of an array field (`#[embed(max)]` on a `Vec`,
    /// `#[reference(many, max)]`).
    pub fn bound(&self) -> Option<u32> {
        match &self.role {
            Role::Embed { attr, .. } if array_element(self.ty).is_some() => attr.max.as_ref().map(|m| m.0),
            Role::Reference { attr, .. } if attr.many.is_present() => attr.max.as_ref().map(|m| m.0),
            _ => None,
        }
    }
}

/// The one relationship attribute of a field, if any.
fn parse_role(f: &syn::Field, cx: &Ctxt) -> Role {
    let mut role = Role::Plain;
    for a in f.attrs.iter().filter(|a| RELATIONSHIP_ATTRS.iter().any(|n| a.path().is_ident(n))) {
        if role.span().is_some() {
            cx.push(
                darling::Error::custom(
                    "a field holds one relationship: `#[embed]`, `#[reference]` and `#[parent_ref]` exclude each \
                     other; keep the one that matches how the data is stored",
                )
                .with_span(a.path()),
            );
            continue;
        }
        let span = a.path().span();
        let parsed = if a.path().is_ident(EMBED) {
            cx.handle(parse_attr::<EmbedAttr>(a)).map(|attr| Role::Embed { attr, span })
        } else if a.path().is_ident(REFERENCE) {
            cx.handle(parse_required::<ReferenceAttr>(a, "#[reference(to = Part)]` or `#[reference(many, to = Part)]"))
                .map(|attr| Role::Reference { attr, span })
        } else if a.path().is_ident(PARENT_REF) {
            cx.handle(parse_required::<ParentRefAttr>(a, "#[parent_ref(to = Host)]"))
                .map(|attr| Role::ParentRef { attr, span })
        } else if a.path().is_ident(BUCKET) {
            cx.handle(parse_required::<BucketAttr>(
                a,
                "#[bucket(size = 50)]` or `#[bucket(by = time, window = \"day\")]",
            ))
            .map(|attr| Role::Bucket { attr, span })
        } else {
            None
        };
        if let Some(parsed) = parsed {
            role = parsed;
        }
    }
    role
}

/// `#[denormalize(..)]`, at most once.
fn parse_copy(f: &syn::Field, ident: &Ident, cx: &Ctxt) -> Option<Copy> {
    let mut copy = None;
    for a in f.attrs.iter().filter(|a| a.path().is_ident(DENORMALIZE)) {
        if copy.is_some() {
            cx.push(
                darling::Error::custom(format!(
                    "`#[denormalize]` appears twice on `{ident}`: a field is the copy of one source field; \
                     remove one"
                ))
                .with_span(a.path()),
            );
            continue;
        }
        copy = cx
            .handle(parse_required::<DenormalizeAttr>(a, "#[denormalize(from = Part::name)]"))
            .map(|attr| Copy { attr, span: a.path().span() });
    }
    copy
}

impl Container<'_> {
    /// The fields that claim `_id`: those marked `#[document(id)]`, or else
    /// those stored as `_id` or named `id`/`_id`.
    pub fn id_candidates(&self) -> Vec<usize> {
        let marked: Vec<usize> = (0..self.fields.len()).filter(|&i| self.fields[i].doc.id.is_present()).collect();
        if !marked.is_empty() {
            return marked;
        }
        (0..self.fields.len())
            .filter(|&i| {
                let f = &self.fields[i];
                f.stored.as_deref() == Some("_id") || f.ident == "id" || f.ident == "_id"
            })
            .collect()
    }
}

/// `#[view(of = Part)]`: the document a view reads, and the crate path
/// (`crate = ".."`); `of` is `None` when absent or malformed (the error is
/// in `cx`).
pub fn view_of(input: &DeriveInput, cx: &Ctxt) -> (Option<syn::Path>, Option<syn::Path>) {
    let attrs: Vec<&Attribute> = input.attrs.iter().filter(|a| a.path().is_ident(VIEW)).collect();
    let (mut of, mut krate) = (None, None);
    for a in &attrs {
        if let Some(v) = cx.handle(ViewAttr::from_meta(&a.meta)) {
            of = Some(v.of);
            krate = v.krate.or(krate);
        }
    }
    if attrs.is_empty() {
        cx.push(
            darling::Error::custom(format!(
                "missing the document this is a view of: add `#[view(of = Part)]` to `{}`",
                input.ident
            ))
            .with_span(&input.ident),
        );
    }
    (of, krate)
}
