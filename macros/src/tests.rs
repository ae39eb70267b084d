//! The derives as a library: each pattern's expansion, pretty-printed and
//! pinned as a snapshot (`src/snapshots/`). Review a changed snapshot with
//! `cargo insta review`; CI fails on any mismatch.

use proc_macro2::TokenStream;
use syn::{parse_quote, DeriveInput};

/// Pins `$expansion` as this test's snapshot (the input is in the test).
macro_rules! snapshot {
    ($expansion:expr) => {
        insta::with_settings!({ omit_expression => true }, { insta::assert_snapshot!($expansion) })
    };
}

fn pretty(tokens: TokenStream) -> String {
    let file: syn::File = syn::parse2(tokens).expect("the expansion is a list of items");
    prettyplease::unparse(&file)
}

fn document(input: DeriveInput) -> String {
    pretty(crate::derive_document_inner(&input))
}

#[test]
fn collection_root() {
    snapshot!(document(parse_quote! {
        #[document(collection = "parts")]
        #[serde(rename_all = "camelCase")]
        pub struct Part {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[document(unique)]
            part_no: String,
            #[document(index)]
            name: String,
            #[document(write_heavy)]
            qty: i32,
            #[serde(skip)]
            cached: Option<String>,
        }
    }));
}

#[test]
fn bounded_embed() {
    snapshot!(document(parse_quote! {
        #[document(collection = "patrons")]
        struct Patron {
            #[serde(rename = "_id")]
            id: ObjectId,
            name: String,
            #[embed(max = 20)]
            addresses: Vec<Address>,
        }
    }));
}

#[test]
fn child_refs_ids() {
    snapshot!(document(parse_quote! {
        #[document(collection = "products")]
        struct Product {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[reference(many, to = Part, max = 2000, on_delete = pull)]
            parts: Vec<ObjectId>,
        }
    }));
}

#[test]
fn child_refs_structs() {
    snapshot!(document(parse_quote! {
        #[document(collection = "products")]
        struct Product {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[reference(many, to = Part, max = 2000)]
            parts: Vec<PartRef>,
            #[reference(many, to = Part, key = part_id, max = 10)]
            spares: Vec<SpareRef>,
        }
    }));
}

#[test]
fn embedded_element() {
    snapshot!(pretty(crate::derive_embedded_inner(&parse_quote! {
        struct SpareRef {
            #[serde(rename = "pid")]
            part_id: ObjectId,
            #[denormalize(from = Part::name)]
            #[serde(rename = "n")]
            name: String,
            #[serde(skip)]
            note: String,
        }
    })));
}

#[test]
fn single_reference_two_way() {
    snapshot!(document(parse_quote! {
        #[document(collection = "tasks")]
        struct Task {
            #[serde(rename = "_id")]
            id: ObjectId,
            description: String,
            #[reference(to = Person, inverse = tasks, on_delete = pull)]
            owner: Option<ObjectId>,
        }
    }));
}

#[test]
fn parent_ref_with_sort() {
    snapshot!(document(parse_quote! {
        #[document(collection = "logmsg")]
        struct LogMsg {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[serde(rename = "t")]
            time: DateTime,
            message: String,
            #[parent_ref(to = Host, sort = "-t, message", on_delete = cascade)]
            host: ObjectId,
        }
    }));
}

#[test]
fn top_level_copy() {
    snapshot!(document(parse_quote! {
        #[document(collection = "parts")]
        struct Part {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[reference(to = catalog::Product)]
            product: ObjectId,
            #[denormalize(from = catalog::Product::name, via = product)]
            product_name: String,
        }
    }));
}

#[test]
fn subset() {
    snapshot!(document(parse_quote! {
        #[document(collection = "products")]
        struct Product {
            #[serde(rename = "_id")]
            id: i32,
            #[embed(max = 10, subset_of = Review, sort = "-published_date", key = review_id, max_bytes = 2000)]
            reviews: Vec<ReviewSummary>,
        }
    }));
}

#[test]
fn bucket_by_count() {
    snapshot!(document(parse_quote! {
        #[document(collection = "comment_pages")]
        struct CommentPage {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[parent_ref(to = BlogEntry, on_delete = cascade)]
            blog_entry_id: ObjectId,
            page: i32,
            #[serde(rename = "n")]
            count: i32,
            #[bucket(size = 50)]
            comments: Vec<Comment>,
        }
    }));
}

#[test]
fn bucket_by_time() {
    snapshot!(document(parse_quote! {
        #[document(collection = "readings")]
        struct ReadingDay {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[parent_ref(to = Sensor)]
            sensor: ObjectId,
            #[serde(rename = "from")]
            day: DateTime,
            count: i32,
            #[bucket(by = time, window = "day", start = day)]
            readings: Vec<Reading>,
        }
    }));
}

#[test]
fn view() {
    snapshot!(pretty(crate::derive_view_inner(&parse_quote! {
        #[view(of = Review)]
        struct ReviewSummary {
            review_id: i32,
            #[serde(rename = "text")]
            review_text: String,
        }
    })));
}
