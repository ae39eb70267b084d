//! The attributes as written, parsed with darling: unknown keys (with a
//! "did you mean"), wrong value types and duplicates are errors at the key.

use super::index_attr::{FieldIndex, FieldText, StructIndex};
use darling::util::{Flag, SpannedValue};
use darling::FromMeta;
use syn::{Expr, Ident, LitStr, Path};

/// `#[document(...)]` on the struct.
#[derive(Debug, Default, FromMeta)]
pub struct ContainerAttr {
    pub collection: Option<SpannedValue<CollectionName>>,
    /// The path of the `docrel` crate, for users who rename the dependency
    /// (`#[document(crate = "my_docrel")]`).
    #[darling(rename = "crate")]
    pub krate: Option<Path>,
    /// The fields a sharded cluster routes by, in order:
    /// `shard_key(tenant, id)` or `shard_key = (tenant, id)`.
    pub shard_key: Option<SpannedValue<ShardKey>>,
    /// The indexes declared on the struct, `index(fields(tenant, -created), ..)`,
    /// one `index(..)` each.
    #[darling(multiple)]
    pub index: Vec<StructIndex>,
    /// These documents were the elements of another type's embedded array
    /// (`moved_from = Post::comments`): `docrel schema diff` plans the move.
    pub moved_from: Option<SpannedValue<Path>>,
}

/// The fields of a shard key, as written (Rust names, or `_id`).
#[derive(Debug, Clone)]
pub struct ShardKey(pub Vec<Ident>);

const SHARD_KEY_FORM: &str = "a shard key names fields of the struct: write `shard_key(tenant, id)`";

impl ShardKey {
    fn field(expr: &Expr) -> darling::Result<Ident> {
        match expr {
            Expr::Group(g) => Self::field(&g.expr),
            Expr::Path(p) => {
                p.path.get_ident().cloned().ok_or_else(|| darling::Error::custom(SHARD_KEY_FORM).with_span(expr))
            }
            _ => Err(darling::Error::custom(SHARD_KEY_FORM).with_span(expr)),
        }
    }
}

impl FromMeta for ShardKey {
    fn from_list(items: &[darling::ast::NestedMeta]) -> darling::Result<Self> {
        let fields = items
            .iter()
            .map(|item| match item {
                darling::ast::NestedMeta::Meta(syn::Meta::Path(p)) if p.get_ident().is_some() => {
                    Ok(p.get_ident().cloned().unwrap_or_else(|| Ident::new("_", proc_macro2::Span::call_site())))
                }
                other => Err(darling::Error::custom(SHARD_KEY_FORM).with_span(other)),
            })
            .collect::<darling::Result<Vec<_>>>()?;
        if fields.is_empty() {
            return Err(darling::Error::custom("an empty shard key: name its fields, e.g. `shard_key(tenant, id)`"));
        }
        Ok(ShardKey(fields))
    }

    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        match expr {
            Expr::Group(g) => Self::from_expr(&g.expr),
            Expr::Paren(p) => Ok(ShardKey(vec![Self::field(&p.expr)?])),
            Expr::Tuple(t) if !t.elems.is_empty() => {
                Ok(ShardKey(t.elems.iter().map(Self::field).collect::<darling::Result<_>>()?))
            }
            Expr::Path(_) => Ok(ShardKey(vec![Self::field(expr)?])),
            _ => Err(darling::Error::custom(SHARD_KEY_FORM).with_span(expr)),
        }
    }
}

/// `#[embedded(...)]` on an element struct.
#[derive(Debug, Default, FromMeta)]
pub struct EmbeddedAttr {
    #[darling(rename = "crate")]
    pub krate: Option<Path>,
}

/// `#[document(...)]` on a field.
#[derive(Debug, Default, FromMeta)]
pub struct FieldDocAttr {
    /// This field is the `_id`.
    pub id: Flag,
    /// Create an index on this field: `index`, or `index(desc, sparse, ..)`.
    pub index: Option<FieldIndex>,
    /// Create a unique index on this field (with `index(..)`: that index is unique).
    pub unique: Flag,
    /// This field is a key of the collection's text index: `text`, or
    /// `text(weight = 10)`.
    pub text: Option<FieldText>,
    /// This field changes often: copying it elsewhere is advised against (rule 5).
    pub write_heavy: Flag,
}

/// `#[embed]` / `#[embed(max = N)]`.
#[derive(Debug, Default, FromMeta)]
pub struct EmbedAttr {
    pub max: Option<SpannedValue<Bound>>,
    /// Acknowledges an embed with no bound (rule 3).
    pub allow_unbounded: Flag,
    /// Acknowledges a bound above the warning threshold.
    pub allow_large: Flag,
    /// Acknowledges embedding a type that is a document of its own (rule 2).
    pub allow_document: Flag,
    /// The threshold above which a bound is warned about (default 200).
    pub warn_above: Option<Bound>,
    /// The size of one element at most, in bytes, for the 16 MiB check.
    pub max_bytes: Option<SpannedValue<Bound>>,
    /// Subset pattern: the elements summarize the newest (or highest)
    /// documents of this child collection.
    pub subset_of: Option<Path>,
    /// The order of the subset (`"-published_date"`).
    pub sort: Option<LitStr>,
    /// The field identifying a child in its summary, for edits and deletes.
    pub key: Option<Ident>,
    /// Keep the `first` N elements in `sort` order (default) or the `last` N.
    pub keep: Option<Ident>,
    /// The collection whose documents (each with a `#[parent_ref]` to this
    /// type) this one struct was, in the old version: `docrel schema diff`
    /// plans the move back into the parent.
    pub moved_from: Option<LitStr>,
}

/// `#[bucket(size = 50)]` / `#[bucket(by = time, window = "day")]` on the
/// array of a bucket document.
#[derive(Debug, Default, FromMeta)]
pub struct BucketAttr {
    pub size: Option<SpannedValue<Bound>>,
    pub by: Option<Ident>,
    pub window: Option<LitStr>,
    pub page: Option<Ident>,
    pub count: Option<Ident>,
    pub start: Option<Ident>,
    pub max_bytes: Option<SpannedValue<Bound>>,
    /// A counter bucket: the field counts a window's events, which are not stored.
    pub counter: Flag,
    /// A counter's field summing each event's amount.
    pub sum: Option<Ident>,
}

/// `#[reference(many, to = T, inverse = f, on_delete = pull, key = id, max = N)]`.
#[derive(Debug, FromMeta)]
pub struct ReferenceAttr {
    pub many: Flag,
    pub to: Option<Path>,
    pub inverse: Option<Ident>,
    pub on_delete: Option<SpannedValue<OnDeleteAttr>>,
    pub key: Option<Ident>,
    pub max: Option<SpannedValue<Bound>>,
    /// Acknowledges a reference array with no bound (rule 3).
    pub allow_unbounded: Flag,
    /// Acknowledges a bound above the warning threshold.
    pub allow_large: Flag,
    /// Acknowledges a two-way N:M reference with a large side.
    pub allow_two_way: Flag,
    /// The threshold above which a bound is warned about (default 5000).
    pub warn_above: Option<Bound>,
    /// The size of one element at most, in bytes, for the 16 MiB check.
    pub max_bytes: Option<SpannedValue<Bound>>,
}

/// `#[parent_ref(to = P, on_delete = cascade, sort = "-time")]`.
#[derive(Debug, FromMeta)]
pub struct ParentRefAttr {
    pub to: Option<Path>,
    pub on_delete: Option<SpannedValue<OnDeleteAttr>>,
    pub sort: Option<LitStr>,
}

/// `#[denormalize(from = Part::name, via = part)]`: this field is a copy
/// of a field of another document.
#[derive(Debug, FromMeta)]
pub struct DenormalizeAttr {
    pub from: Option<Path>,
    pub via: Option<Ident>,
    /// Acknowledges copying a field its source marks `write_heavy` (rule 5).
    pub allow_write_heavy: Flag,
}

/// `#[view(of = T)]`.
#[derive(Debug, FromMeta)]
pub struct ViewAttr {
    pub of: Path,
    #[darling(rename = "crate")]
    pub krate: Option<Path>,
}

/// `on_delete = pull | cascade | restrict` (a bare word or a string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDeleteAttr {
    Pull,
    Cascade,
    Restrict,
}

impl FromMeta for OnDeleteAttr {
    fn from_string(value: &str) -> darling::Result<Self> {
        match value {
            "pull" => Ok(OnDeleteAttr::Pull),
            "cascade" => Ok(OnDeleteAttr::Cascade),
            "restrict" => Ok(OnDeleteAttr::Restrict),
            other => Err(darling::Error::unknown_value(other).with_span(&proc_macro2::Span::call_site())),
        }
    }

    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        match expr {
            // A `macro_rules!` fragment (`$coll:literal`) arrives in an invisible group.
            Expr::Group(g) => Self::from_expr(&g.expr),
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let word = p.path.get_ident().map(ToString::to_string).unwrap_or_default();
                Self::from_string(&word).map_err(|_| {
                    darling::Error::custom(format!(
                        "unknown on_delete rule `{word}`: write `on_delete = pull`, `on_delete = cascade` or `on_delete = restrict`"
                    ))
                    .with_span(expr)
                })
            }
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Self::from_string(&s.value()).map_err(|_| {
                darling::Error::custom(format!(
                    "unknown on_delete rule `{}`: write `on_delete = pull`, `on_delete = cascade` or `on_delete = restrict`",
                    s.value()
                ))
                .with_span(expr)
            }),
            _ => Err(darling::Error::custom(
                "expected `on_delete = pull`, `on_delete = cascade` or `on_delete = restrict`",
            )
            .with_span(expr)),
        }
    }
}

/// `collection = "parts"`: a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionName(pub String);

impl std::ops::Deref for CollectionName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl FromMeta for CollectionName {
    fn from_string(value: &str) -> darling::Result<Self> {
        Ok(CollectionName(value.to_owned()))
    }

    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        match expr {
            // A `macro_rules!` fragment (`$coll:literal`) arrives in an invisible group.
            Expr::Group(g) => Self::from_expr(&g.expr),
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Self::from_string(&s.value()),
            other => {
                let written = quote::ToTokens::to_token_stream(other).to_string();
                Err(darling::Error::custom(format!(
                    "the collection name is a string: write `collection = \"{}\"`",
                    written.trim_matches('"')
                ))
                .with_span(expr))
            }
        }
    }
}

/// A bound: `max = 20`, a whole number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound(pub u32);

impl std::ops::Deref for Bound {
    type Target = u32;
    fn deref(&self) -> &u32 {
        &self.0
    }
}

impl FromMeta for Bound {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        match expr {
            // A `macro_rules!` fragment (`$coll:literal`) arrives in an invisible group.
            Expr::Group(g) => Self::from_expr(&g.expr),
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<u32>().map(Bound).map_err(|_| {
                darling::Error::custom(format!(
                    "bound `{i}` is out of range: write a whole number from 1 to {}",
                    u32::MAX
                ))
                .with_span(expr)
            }),
            _ => Err(darling::Error::custom("a bound is a whole number: write it like `max = 20`").with_span(expr)),
        }
    }
}
