//! The schema graph's answers for the example schemas: the copies of each
//! source, the subsets of each child, two-way inverses, who refers to a
//! collection, and collections that two types share (catalog's and
//! reviews' `products` here). No server needed: the graph is built from
//! the link-time registry alone.
#![allow(clippy::duplicate_mod, reason = "each example includes examples/common as a module of its own")]

use docrel::schema::graph::{graph, Graph};
use docrel::schema::graph::{Shape, Target};
use docrel::{schema::OnDelete, Document};

#[allow(dead_code)]
#[path = "../examples/blog.rs"]
mod blog;
#[allow(dead_code)]
#[path = "../examples/catalog.rs"]
mod catalog;
#[allow(dead_code)]
#[path = "../examples/library.rs"]
mod library;
#[allow(dead_code)]
#[path = "../examples/logging.rs"]
mod logging;
#[allow(dead_code)]
#[path = "../examples/reviews.rs"]
mod reviews;
#[allow(dead_code)]
#[path = "../examples/tasks.rs"]
mod tasks;

/// A target as `(collection, shape, [(copy field, source field)])`.
type Described = (&'static str, Shape, Vec<(&'static str, &'static str)>);

fn shapes(targets: &[Target]) -> Vec<Described> {
    targets.iter().map(|t| (t.collection, t.shape, t.fields.clone())).collect()
}

#[test]
fn copies_of_each_source() {
    let g = graph();
    assert_eq!(
        shapes(g.targets_of("parts")),
        [("products", Shape::Array { array: "parts", key: "id" }, vec![("name", "name")])]
    );
    assert_eq!(
        shapes(g.targets_of("products")),
        [(
            "parts",
            Shape::Top { via: "product" },
            vec![("product_name", "name"), ("product_catalog_number", "catalog_number")]
        )]
    );
    assert_eq!(shapes(g.targets_of("hosts")), [("logmsg", Shape::Top { via: "host" }, vec![("ipaddr", "ipaddr")])]);
    assert!(g.targets_of("posts").is_empty());
    assert_eq!(g.copied_fields("products"), ["catalog_number", "name"]);
    assert_eq!(g.sources(), ["hosts", "parts", "products"]);
}

#[test]
fn subsets_of_each_child() {
    let g = graph();
    let logs = g.subsets_of("logmsg");
    assert_eq!(logs.len(), 1);
    assert_eq!(
        (logs[0].parent, logs[0].rel.field, logs[0].parent_field, logs[0].max),
        ("hosts", "logmsgs", "host", 1000)
    );
    let reviews = g.subsets_of("reviews");
    assert_eq!(reviews.len(), 1);
    assert_eq!(
        (reviews[0].parent, reviews[0].parent_field, reviews[0].spec.key),
        ("products", "product_id", Some("review_id"))
    );
    assert!(g.subsets_of("comments").is_empty());
}

#[test]
fn derived_fields_are_what_a_write_must_watch() {
    let g = graph();
    assert!(g.has_derived("parts") && g.has_derived("reviews") && g.has_derived("logmsg"));
    assert!(!g.has_derived("posts") && !g.has_derived("comments"));
    assert_eq!(g.derived_fields("parts"), Some(&["name"][..]));
    assert_eq!(g.derived_fields("posts"), Some(&[][..]));
    // A review's summary: its fields, the parent reference, the key and the order.
    assert_eq!(
        g.derived_fields("reviews"),
        Some(&["product_id", "published_date", "review_author", "review_id", "review_text"][..])
    );
    assert!(g.holds_copies(catalog::Part::schema()));
    assert!(g.holds_copies(catalog::Product::schema()));
    assert!(!g.holds_copies(logging::Host::schema()));
}

#[test]
fn inverses_of_two_way_references() {
    let g = graph();
    let person_tasks = tasks::Person::schema().relation("tasks").expect("Person.tasks");
    let task_owner = tasks::Task::schema().relation("owner").expect("Task.owner");
    let (schema, rel) = g.inverse_of(person_tasks).expect("inverse of Person.tasks");
    assert_eq!((schema.rust_name, rel.field), ("Task", "owner"));
    assert!(std::ptr::eq(rel, task_owner));
    let (schema, rel) = g.inverse_of(task_owner).expect("inverse of Task.owner");
    assert_eq!((schema.rust_name, rel.field), ("Person", "tasks"));
    let book_authors = library::Book::schema().relation("authors").expect("Book.authors");
    assert_eq!(g.inverse_of(book_authors).map(|(s, r)| (s.collection, r.field)), Some(("authors", "books")));
    let one_way = library::Book::schema().relation("categories").expect("Book.categories");
    assert!(g.inverse_of(one_way).is_none());
}

/// The runtime finds a handle's inverse, subset and copies by the address
/// of its schema entry, so a handle must carry the entry itself and not a
/// copy of it (a `const`-computed reference can be a per-codegen-unit copy
/// in a release build; the history checker's release run lost a subset to
/// that).
#[test]
fn handles_carry_their_schema_entry_itself() {
    let g = graph();
    let from_handle = tasks::Task::rels().owner.relation();
    let from_schema = tasks::Task::schema().relation("owner").expect("Task.owner");
    assert!(std::ptr::eq(from_handle, from_schema));
    assert_eq!(g.inverse_of(from_handle).map(|(s, r)| (s.rust_name, r.field)), Some(("Person", "tasks")));
}

#[test]
fn references_to_a_collection() {
    let g = graph();
    let to_categories: Vec<_> =
        g.references_to("categories").iter().map(|(s, r)| (s.collection, r.field, r.on_delete)).collect();
    assert_eq!(to_categories, [("books", "categories", OnDelete::Restrict)]);
    let mut to_hosts: Vec<_> = g.references_to("hosts").iter().map(|(s, r)| (s.collection, r.field)).collect();
    to_hosts.sort();
    assert_eq!(to_hosts, [("logmsg", "host")]);
    assert!(g.references_to("nothing_refers_here").is_empty());
}

#[test]
fn two_types_on_one_collection_are_reported() {
    let g = graph();
    let shared = g.shared_collections();
    assert_eq!(shared.len(), 1, "{shared:?}");
    let (collection, types) = shared[0];
    assert_eq!(collection, "products");
    let names: Vec<_> = types.iter().map(|s| s.module.rsplit("::").next().unwrap_or("")).collect();
    assert_eq!(names, ["catalog", "reviews"]);
    // A graph of one example alone sees no sharing.
    let alone = Graph::build(docrel::schema::registry::schemas().filter(|s| s.module.ends_with("::catalog")));
    assert!(alone.shared_collections().is_empty());
    assert_eq!(alone.targets_of("parts").len(), 1);
}
