//! # docrel
//!
//! MongoDB schema design patterns as Rust derive macros. Annotate plain
//! serde structs with the relationship they take part in, and docrel
//! generates the typed code a careful engineer writes by hand for each:
//! repositories, bounded embeds, application-level join loaders with one
//! `$in` per relation, parent-reference queries, and the indexes they need.
//!
//! ```
//! # docrel::testing::doc_test(|db| async move {
//! use docrel::{Document, View, bson::oid::ObjectId};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Document, Serialize, Deserialize, Debug)]
//! #[document(collection = "parts")]
//! struct Part {
//!     #[serde(rename = "_id")]
//!     id: ObjectId,
//!     partno: String,
//!     name: String,
//!     price: f64,
//! }
//!
//! #[derive(Document, Serialize, Deserialize, Debug)]
//! #[document(collection = "products")]
//! struct Product {
//!     #[serde(rename = "_id")]
//!     id: ObjectId,
//!     name: String,
//!     #[reference(many, to = Part, max = 2000)]
//!     parts: Vec<ObjectId>,
//! }
//!
//! #[derive(View, Deserialize)]
//! #[view(of = Part)]
//! struct PartName {
//!     name: String,
//! }
//!
//! /// A product as the page shows it: the name, and the parts to load.
//! #[derive(View, Deserialize)]
//! #[view(of = Product)]
//! struct ProductCard {
//!     name: String,
//!     parts: Vec<ObjectId>,
//! }
//!
//! let grommet = Part { id: ObjectId::new(), partno: "123-aff-456".into(), name: "#4 grommet".into(), price: 3.99 };
//! Part::repo(&db).insert(&grommet).await?;
//! let product = Product { id: ObjectId::new(), name: "left-handed smoke shifter".into(), parts: vec![grommet.id] };
//! Product::repo(&db).insert(&product).await?;
//!
//! let trips = docrel::testing::round_trips(&db);
//! let mark = trips.mark();
//! let cards = Product::repo(&db).find(docrel::Filter::all()).view::<ProductCard>().await?;
//! let parts = Product::rels().parts.load::<PartName>(&db, &cards).await?;
//! assert_eq!(trips.since(mark), 2); // 1 + K: the parents, then one `$in` per relation
//! assert_eq!(parts.of(0).next().map(|p| p.name.as_str()), Some("#4 grommet"));
//! # Ok(()) });
//! ```
//!
//! **The guide** — from the three questions of the reference texts to the
//! right attribute, one page per pattern with its stored shape, costs,
//! consistency and warnings — is the mdBook in `docs/guide/` of the
//! repository: `scripts/guide` builds it (`docs/guide/book/index.html`), and
//! `cargo doc -p docrel-guide --open` shows the same pages as rustdoc. Every
//! snippet in it runs against the server in `scripts/test`.
//!
//! **The attributes**: [`attributes`] lists every key of every attribute
//! of the derives, with its default, an example, and the compiler warnings
//! with how to acknowledge each one. In short:
//!
//! | attribute | on | pattern |
//! |---|---|---|
//! | `#[document(collection = "..")]` | struct | a collection root: typed repository, field handles |
//! | `#[document(id)]`, `#[document(index)]`, `#[document(unique)]` | field | the `_id`; declared indexes |
//! | `#[embed]`, `#[embed(max = N)]` | `T` / `Vec<T>` | one-to-one / one-to-few, bounded; `subset_of = ..` keeps a subset |
//! | `#[reference(many, to = T)]` | `Vec<Id>` or `Vec<{id, ..}>` | one-to-many, child references |
//! | `#[reference(to = T)]` | `Id` / `Option<Id>` | many-to-one, one-to-one by link |
//! | `#[parent_ref(to = P, sort = "-time")]` | `Id` | one-to-squillions |
//! | `inverse = field`, `on_delete = pull \| cascade \| restrict` | references | two-way references, delete rules |
//! | `#[denormalize(from = T::field)]` | field | a copy kept up to date |
//! | `#[bucket(size = N)]`, `#[bucket(by = time, window = "day")]` | `Vec<T>` | buckets by count or by time |

/// Derives [`Document`](trait@Document): a struct stored in a collection of
/// its own, with its repository, field handles and relationships. Every key
/// of `#[document]`, `#[embed]`, `#[reference]`, `#[parent_ref]`,
/// `#[denormalize]` and `#[bucket]` is in [`attributes`].
pub use docrel_macros::Document;
/// Derives [`Embedded`](trait@Embedded) for the `{id, ..}` element struct of
/// a reference array whose fields may be copies: see
/// [`attributes`](attributes#deriveembedded).
pub use docrel_macros::Embedded;
/// Derives [`View`](trait@View): some fields of a document, read with a
/// projection. See [`attributes`](attributes#deriveview).
pub use docrel_macros::View;

/// Every attribute of the derives: each key, what it does, its default and
/// a compiling example; the compiler warnings and how to acknowledge them.
#[doc = include_str!("attributes.md")]
pub mod attributes {}
pub use docrel_runtime::*;

// The README's code compiles with the crate's doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
