//! One repair pass over everything derived, with what docrel's public API
//! offers: the contract's (b) says this restores I1–I5 after a call
//! returned `Err` (copies by `check::copies(..).repair`, subsets by `rebuild`,
//! two-way references by `inverse_check::repair_all`, bucket counts by
//! `bucket_check::repair_all`).

use super::check::{Inv, Violation};
use super::schema::{CommentPage, Item, Part, Person, Product};
use docrel::bson::{doc, Bson};
use docrel::mongodb::Database;

/// Repairs every denormalized copy (one `check::copies(..).repair` per source),
/// rebuilds the subset of every parent, repairs the two-way references and
/// the buckets; returns what each step reported.
pub async fn repair_everything(db: &Database) -> docrel::Result<Vec<String>> {
    let mut out = Vec::new();
    // Copies of Part::name (products.parts[].pname), Product::name
    // (parts.productName), Person::name (tasks.owner_name), Item::name
    // (reviews.item_name).
    let part = docrel::check::copies::<Part>().repair(db).run().await?;
    out.push(format!("repair parts: stale {} fixed {} dangling {}", part.stale, part.fixed, part.dangling));
    let product = docrel::check::copies::<Product>().repair(db).run().await?;
    out.push(format!("repair products: stale {} fixed {} dangling {}", product.stale, product.fixed, product.dangling));
    let person = docrel::check::copies::<Person>().repair(db).run().await?;
    out.push(format!("repair people: stale {} fixed {} dangling {}", person.stale, person.fixed, person.dangling));
    // reviews.item_name.
    let item = docrel::check::copies::<Item>().repair(db).run().await?;
    out.push(format!("repair items: stale {} fixed {} dangling {}", item.stale, item.fixed, item.dangling));
    // Every source of copies in this binary must have been repaired above.
    let sources = docrel::schema::graph::of(db).sources();
    if sources != ["items", "parts", "people", "products"] {
        return Err(docrel::Error::Invalid {
            what: docrel::Misuse::Application("repair_everything"),
            message: format!("the schema has copies from {sources:?}: repair each of them here"),
        });
    }
    // Subsets: every parent that exists.
    let ids = db
        .collection::<docrel::bson::Document>("items")
        .distinct("_id", doc! {})
        .await
        .map_err(|e| docrel::Error::driver("distinct", "items", e))?;
    let mut rebuilt = Vec::new();
    for id in ids {
        let Bson::Int32(id) = id else { continue };
        let n = Item::rels().reviews.rebuild(db, &id).await?;
        rebuilt.push(format!("{id}:{n}"));
    }
    out.push(format!("rebuild items.reviews: {}", rebuilt.join(" ")));
    let inverse = docrel::check::inverse::<Person>().repair(db).run().await?;
    out.push(format!(
        "repair two-way references: mismatched {} dangling {} fixed {} unfixable {} {:?}",
        inverse.mismatched, inverse.dangling, inverse.fixed, inverse.unfixable, inverse.problems
    ));
    let buckets = docrel::check::buckets::<CommentPage>().repair(db).run().await?;
    out.push(format!(
        "repair buckets: miscounted {} fixed {} unfixable {} {:?}",
        buckets.miscounted, buckets.fixed, buckets.unfixable, buckets.problems
    ));
    Ok(out)
}

/// A task owning a person who was never inserted (its insert named the
/// person, who never came) dangles, as any reference to a missing document
/// does: MongoDB has no foreign keys, and the contract is that `verify`
/// reports it, not that a repair guesses another owner. Such pending
/// references are accepted when the two-way verify counts at least as many
/// dangling references; any more stay violations.
pub async fn accept_reported_dangling(
    db: &Database,
    violations: &mut Vec<Violation>,
    notes: &mut Vec<String>,
) -> Result<(), String> {
    let owner_gone = |v: &Violation| v.inv == Inv::Pending && v.what.contains("who does not exist");
    let left = violations.iter().filter(|v| owner_gone(v)).count() as u64;
    if left == 0 {
        return Ok(());
    }
    let verify = docrel::check::inverse::<Person>().verify(db).run().await;
    let reported = verify.map_err(|e| format!("the two-way verify failed: {e}"))?.dangling;
    if reported >= left {
        notes.push(format!("{left} task(s) owned by a person never inserted: dangling, and verify reports {reported}"));
        violations.retain(|v| !owner_gone(v));
    }
    Ok(())
}
