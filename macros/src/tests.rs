//! The derives as a library: each pattern's expansion, pretty-printed and
//! pinned as a snapshot (`src/snapshots/`). Review a changed snapshot with
//! `cargo insta review`; CI fails on any mismatch.

use crate::internals::ast::Container;
use crate::internals::check;
use crate::internals::ctxt::Ctxt;
use crate::internals::model::{Element, Model, RelationKind, SortKey, StoredName};
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

/// Every option of an index: compound and descending, unique, sparse, a
/// TTL, partial filters (JSON and an expression), a collation, a text index
/// with weights and a language, and a field's own index with options.
#[test]
fn declared_indexes() {
    snapshot!(document(parse_quote! {
        #[document(
            collection = "events",
            index(fields(tenant, -created), name = "by_tenant", unique),
            index(fields(created), expire_after = "30d"),
            index(fields(email), unique, partial = r#"{"active": true}"#, collation(locale = "fr", strength = 2)),
            index(fields(tenant), text(title = 10, body), default_language = "french"),
        )]
        struct Event {
            #[serde(rename = "_id")]
            id: ObjectId,
            tenant: String,
            created: DateTime,
            email: String,
            active: bool,
            title: String,
            body: String,
            #[document(index(desc, partial = doc! {"active": true}))]
            score: Option<i64>,
            #[document(unique, index(sparse))]
            handle: Option<String>,
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
            #[parent_ref(to = Host, sort = "-time, message", on_delete = cascade)]
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
fn bucket_counter() {
    snapshot!(document(parse_quote! {
        #[document(collection = "page_views")]
        struct PageViews {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[parent_ref(to = Page, on_delete = cascade)]
            page: ObjectId,
            start: DateTime,
            #[bucket(counter, window = "hour", sum = seconds)]
            views: i64,
            seconds: f64,
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

#[test]
fn failed_document_keeps_its_items() {
    snapshot!(document(parse_quote! {
        #[document(collection = "parts")]
        pub struct Part {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[reference(many, to = Product, key = id)]
            products: Vec<ObjectId>,
        }
    }));
}

/// Checks `input` as a document and hands its model to `f`.
fn with_model(input: DeriveInput, f: impl FnOnce(&Model)) {
    let cx = Ctxt::new();
    let container = Container::from_ast(&input, "Document", &cx).expect("a struct with named fields");
    let model = check::document(&container, &cx);
    if let Err(e) = cx.check() {
        panic!("unexpected errors: {e}");
    }
    f(&model.expect("a model when there is no error"));
}

fn here(keys: &[SortKey]) -> Vec<(String, i32)> {
    keys.iter()
        .map(|k| match &k.name {
            StoredName::Here(name) => (name.clone(), k.direction),
            _ => panic!("a stored name of this type"),
        })
        .collect()
}

#[test]
fn fields_are_stored_under_their_serde_names() {
    with_model(
        parse_quote! {
            #[document(collection = "loans")]
            #[serde(rename_all = "camelCase")]
            struct Loan {
                #[serde(rename = "_id")]
                id: ObjectId,
                due_date: DateTime,
                #[serde(rename = "who")]
                patron_id: ObjectId,
                #[serde(skip)]
                cache: u8,
            }
        },
        |m| {
            let stored: Vec<_> = m.fields.iter().map(|f| f.stored.as_str()).collect();
            assert_eq!(stored, ["_id", "dueDate", "who"]);
            assert_eq!(m.id.ident, "id");
        },
    );
}

#[test]
fn parent_ref_sort_holds_stored_names() {
    with_model(
        parse_quote! {
            #[document(collection = "logmsg")]
            #[serde(rename_all = "camelCase")]
            struct LogMsg {
                #[serde(rename = "_id")]
                id: ObjectId,
                #[serde(rename = "t")]
                time: DateTime,
                sent_at: DateTime,
                #[parent_ref(to = Host, sort = "-time, +sentAt, sent_at")]
                host: ObjectId,
            }
        },
        |m| {
            let RelationKind::ParentRef { order, .. } = &m.relations[0].kind else { panic!("a parent_ref") };
            assert_eq!(here(order), [("t".to_owned(), -1), ("sentAt".to_owned(), 1), ("sentAt".to_owned(), 1)]);
        },
    );
}

#[test]
fn bucket_fields_are_stored_names() {
    with_model(
        parse_quote! {
            #[document(collection = "comment_pages")]
            #[serde(rename_all = "camelCase")]
            struct CommentPage {
                #[serde(rename = "_id")]
                id: ObjectId,
                #[parent_ref(to = BlogEntry)]
                blog_entry_id: ObjectId,
                #[serde(rename = "p")]
                page_no: i32,
                comment_count: i32,
                #[bucket(size = 50, page = page_no, count = comment_count)]
                comments: Vec<Comment>,
            }
        },
        |m| {
            let RelationKind::Bucket(b) = &m.relations[1].kind else { panic!("a bucket") };
            assert_eq!(
                (b.parent_field.as_str(), b.page.as_str(), b.count.as_str(), b.start.as_str()),
                ("blogEntryId", "p", "commentCount", "start")
            );
        },
    );
}

#[test]
fn counter_fields_are_stored_names() {
    with_model(
        parse_quote! {
            #[document(collection = "downloads")]
            #[serde(rename_all = "camelCase")]
            struct Downloads {
                #[serde(rename = "_id")]
                id: ObjectId,
                #[parent_ref(to = Page)]
                page_id: ObjectId,
                window_start: DateTime,
                #[bucket(counter, window = "day", start = window_start, sum = total_bytes)]
                download_count: u64,
                total_bytes: i64,
            }
        },
        |m| {
            let RelationKind::Bucket(b) = &m.relations[1].kind else { panic!("a bucket") };
            let sum = b.counter.as_ref().and_then(|c| c.sum.as_ref()).map(|(s, _)| s.as_str());
            assert_eq!(
                (b.parent_field.as_str(), b.count.as_str(), b.start.as_str(), sum, b.window_ms),
                ("pageId", "downloadCount", "windowStart", Some("totalBytes"), Some(86_400_000))
            );
        },
    );
}

#[test]
fn subset_sort_and_key_are_read_from_the_child() {
    let input: DeriveInput = parse_quote! {
        #[document(collection = "products")]
        struct Product {
            #[serde(rename = "_id")]
            id: i32,
            #[embed(max = 10, subset_of = Review, sort = "-published_date, stars", key = review_id)]
            reviews: Vec<ReviewSummary>,
        }
    };
    with_model(input.clone(), |m| {
        let RelationKind::Embed { subset: Some(subset), .. } = &m.relations[0].kind else { panic!("a subset") };
        let names: Vec<_> = subset
            .sort
            .iter()
            .map(|k| match &k.name {
                StoredName::OfDocument { doc, name, .. } => {
                    (quote::quote!(#doc).to_string(), name.clone(), k.direction)
                }
                _ => panic!("a stored name of the child"),
            })
            .collect();
        assert_eq!(
            names,
            [("Review".to_owned(), "published_date".to_owned(), -1), ("Review".to_owned(), "stars".to_owned(), 1)]
        );
        assert!(matches!(&subset.key, Some(StoredName::OfDocument { name, .. }) if name == "review_id"));
    });
    let expanded = crate::derive_document_inner(&input).to_string();
    // `Review` is read through its checked alias (`__DocrelDoc0`).
    assert!(expanded.contains("type __DocrelDoc0 = < < __docrel :: Pick < Review ,"), "{expanded}");
    // By stored or Rust name, looked up in the child's links when compiled.
    assert!(
        expanded.contains(
            r#"sort : & [(__docrel :: field_named (< __DocrelDoc0 > :: __DOCREL_LINKS , "published_date") , - 1i32)"#
        ),
        "{expanded}"
    );
    assert!(
        expanded.contains(
            r#"key : __docrel :: Some (__docrel :: field_named (< __DocrelDoc0 > :: __DOCREL_LINKS , "review_id"))"#
        ),
        "{expanded}"
    );
}

#[test]
fn element_key_is_read_from_the_element() {
    with_model(
        parse_quote! {
            #[document(collection = "products")]
            struct Product {
                #[serde(rename = "_id")]
                id: ObjectId,
                #[reference(many, to = Part)]
                parts: Vec<PartRef>,
                #[reference(many, to = Part, key = part_id)]
                spares: Vec<SpareRef>,
            }
        },
        |m| {
            let keys: Vec<_> = m
                .relations
                .iter()
                .map(|r| match &r.kind {
                    RelationKind::RefMany { element: Element::Structs { key, .. }, .. } => key.to_string(),
                    _ => panic!("an array of structs"),
                })
                .collect();
            assert_eq!(keys, ["id", "part_id"]);
        },
    );
    // The element's derive gives each field's stored name.
    let embedded = crate::derive_embedded_inner(&parse_quote! {
        #[serde(rename_all = "UPPERCASE")]
        struct SpareRef { part_id: ObjectId, #[serde(rename = "n")] name: String }
    })
    .to_string();
    assert!(embedded.contains(r#"const __docrel_stored_part_id : & 'static str = "PART_ID""#), "{embedded}");
    assert!(embedded.contains(r#"const __docrel_stored_name : & 'static str = "n""#), "{embedded}");
}

#[test]
fn a_sort_that_names_no_field_is_an_error_not_a_panic() {
    let expanded = document(parse_quote! {
        #[document(collection = "products")]
        struct Product {
            #[serde(rename = "_id")]
            id: i32,
            #[embed(max = 10, subset_of = Review, sort = "-")]
            reviews: Vec<ReviewSummary>,
        }
    });
    assert!(expanded.contains("`sort` names ``, which is not a field name"), "{expanded}");
}

/// Every trait impl in `expanded` carries `#[automatically_derived]`, and no
/// inherent impl does (rustc accepts it on trait impls only, and warns that
/// it will refuse it elsewhere).
fn assert_impls_marked(expanded: &str) {
    let lines: Vec<&str> = expanded.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if !line.trim_start().starts_with("impl") {
            continue;
        }
        let attrs = lines[..i].iter().rev().take_while(|l| l.trim_start().starts_with("#["));
        let marked = attrs.into_iter().any(|l| l.contains("automatically_derived"));
        // A trait impl's header may wrap: read it up to its `{`.
        let header: String = lines[i..]
            .iter()
            .take_while(|l| !l.contains('{'))
            .chain(lines[i..].iter().find(|l| l.contains('{')))
            .copied()
            .collect();
        let trait_impl = header.contains(" for ");
        assert_eq!(marked, trait_impl, "`{}`:\n{expanded}", line.trim());
    }
}

/// Inputs that reach every part of the generation: warnings and their
/// probes, copies, two-way references, an element struct, a view, and the
/// fallbacks of a failed struct and of an enum.
fn every_kind_of_expansion(krate: Option<&str>) -> Vec<String> {
    let krate: Option<syn::Attribute> = krate.map(|k| parse_quote!(#[document(crate = #k)]));
    let ekrate: Option<syn::Attribute> = krate.as_ref().map(|a| {
        let k = a.parse_args::<syn::MetaNameValue>().unwrap().value;
        parse_quote!(#[embedded(crate = #k)])
    });
    let vkrate = krate.as_ref().map(|a| a.parse_args::<syn::MetaNameValue>().unwrap().value);
    let view_attr: syn::Attribute = match &vkrate {
        Some(k) => parse_quote!(#[view(of = Part, crate = #k)]),
        None => parse_quote!(#[view(of = Part)]),
    };
    vec![
        document(parse_quote! {
            #krate
            #[document(collection = "products")]
            struct Product {
                #[serde(rename = "_id")]
                id: ObjectId,
                #[embed]
                notes: Option<Vec<String>>,
                #[embed]
                main_part: Part,
                #[reference(many, to = Part, inverse = products, max = 5000)]
                parts: Vec<ObjectId>,
                #[reference(to = Part)]
                part: Option<ObjectId>,
                #[denormalize(from = Part::qty, via = part)]
                part_qty: Option<i32>,
                #[reference(many, to = Part, max = 10)]
                lines: Vec<PartRef>,
            }
        }),
        pretty(crate::derive_embedded_inner(&parse_quote! {
            #ekrate
            struct PartRef {
                id: ObjectId,
                #[denormalize(from = Part::qty)]
                qty: i32,
            }
        })),
        pretty(crate::derive_view_inner(&parse_quote! {
            #view_attr
            struct PartView { name: String }
        })),
        document(parse_quote! {
            #krate
            #[document(collection = "parts")]
            struct Broken {
                #[serde(rename = "_id")]
                id: ObjectId,
                #[embed(max = 0)]
                tags: Vec<String>,
            }
        }),
        document(parse_quote! {
            #krate
            #[document(collection = "events")]
            enum Event { Started }
        }),
        pretty(crate::derive_embedded_inner(&parse_quote! {
            #ekrate
            struct BadRef {
                #[serde(rename = "a.b")]
                id: ObjectId,
            }
        })),
    ]
}

#[test]
fn every_generated_trait_impl_is_marked_automatically_derived() {
    for expanded in every_kind_of_expansion(None) {
        assert!(expanded.contains("impl"), "{expanded}");
        assert_impls_marked(&expanded);
    }
}

#[test]
fn a_renamed_crate_replaces_every_docrel_path() {
    for expanded in every_kind_of_expansion(Some("my_docrel")) {
        assert!(!expanded.contains("::docrel::"), "{expanded}");
        assert!(expanded.contains("my_docrel::"), "{expanded}");
    }
}
