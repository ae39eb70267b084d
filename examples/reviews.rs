//! The product reviews of the MongoDB manual's *Subset Pattern*: every
//! review lives in the `reviews` collection, and the product keeps its ten
//! most recent ones, newest first, for the product page. docrel keeps that
//! subset right when reviews are added, edited and deleted.
//!
//! ```text
//! products: {_id: 1, name, description, price: {value, currency}, reviews: [10 newest]}
//! reviews:  {_id, review_id, product_id, review_author, review_text, published_date}
//! ```
//!
//! Run: `MONGODB_URI=mongodb://... cargo run --example reviews` (database
//! `DOCREL_DB`, default `docrel_reviews`; dropped first, left in place).

use docrel::bson::{oid::ObjectId, DateTime, Decimal128};
use docrel::mongodb::Database;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[path = "common/mod.rs"]
pub mod common;

// ANCHOR: schema
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Price {
    pub value: Decimal128,
    pub currency: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: i32,
    pub name: String,
    pub description: String,
    pub price: Price,
    /// "the application loads the ten most recent reviews"
    #[embed(max = 10, subset_of = Review, sort = "-published_date", key = review_id, max_bytes = 2000)]
    pub reviews: Vec<ReviewSummary>,
}

/// A review as the product keeps it (the review without its `product_id`).
#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = Review)]
pub struct ReviewSummary {
    pub review_id: i32,
    pub review_author: String,
    pub review_text: String,
    pub published_date: DateTime,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "reviews")]
pub struct Review {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[document(unique)]
    pub review_id: i32,
    #[parent_ref(to = Product, sort = "-published_date")]
    pub product_id: i32,
    pub review_author: String,
    pub review_text: String,
    pub published_date: DateTime,
}
// ANCHOR_END: schema

/// The ids the scenario ended with.
#[derive(Debug, Clone)]
pub struct Reviews {
    /// The review ids the product keeps, newest first.
    pub kept: Vec<i32>,
    /// Whether the kept subset matched the reviews collection at the end.
    pub consistent: bool,
}

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;
/// 2019-02-16T00:00:00Z.
const FEB_16_MS: i64 = 1_550_275_200_000;

fn review(review_id: i32, author: &str, text: &str, published_ms: i64) -> Review {
    Review {
        id: ObjectId::new(),
        review_id,
        product_id: 1,
        review_author: author.into(),
        review_text: text.into(),
        published_date: DateTime::from_millis(published_ms),
    }
}

/// The reviews of the text (786 Kristina, 785 Trina, 776 Pablo, 1 Hans) and
/// the ones its "..." stands for, oldest first.
fn all_reviews() -> Vec<Review> {
    let mut out = vec![review(1, "Hans", "Meh, it's okay.", 1_512_518_400_000)]; // 2017-12-06
    out.push(review(776, "Pablo", "Amazing!", FEB_16_MS + 4 * HOUR_MS));
    let others = ["Ines", "Goran", "Fatima", "Emil", "Dara", "Chen", "Bruno", "Ada"];
    for (k, author) in others.iter().enumerate() {
        let id = 777 + k as i32;
        out.push(review(
            id,
            author,
            &format!("Review {id}: does what it says."),
            FEB_16_MS + (6 + 2 * k as i64) * HOUR_MS,
        ));
    }
    out.push(review(785, "Trina", "Nice product. Slow shipping.", FEB_16_MS + DAY_MS));
    out.push(review(786, "Kristina", "This is indeed an amazing widget.", FEB_16_MS + 2 * DAY_MS));
    out
}

/// `2019-02-18`.
fn day(d: DateTime) -> String {
    d.try_to_rfc3339_string().map(|s| s[..10].to_owned()).unwrap_or_else(|_| d.to_string())
}

async fn show_page(db: &Database, log: &common::Log, what: &str) -> docrel::Result<Product> {
    let product = log.step(what, Product::repo(db).require(&1)).await?;
    let ids: Vec<i32> = product.reviews.iter().map(|r| r.review_id).collect();
    log.show(format!("{} ({} {}): reviews {ids:?}", product.name, product.price.value, product.price.currency));
    Ok(product)
}

pub async fn scenario(db: &Database, log: &common::Log) -> docrel::Result<Reviews> {
    log.title("reviews: the product keeps its 10 most recent reviews; all of them live in `reviews`");
    log.step("create the indexes of reviews", Review::repo(db).ensure_indexes()).await?;
    let value: Decimal128 = "119.99".parse().map_err(|e| docrel::Error::Invalid {
        what: docrel::Misuse::Application("price"),
        message: format!("119.99 is not a decimal: {e}"),
    })?;
    let widget = Product {
        id: 1,
        name: "Super Widget".into(),
        description: "This is the most useful item in your toolbox.".into(),
        price: Price { value, currency: "USD".into() },
        reviews: Vec::new(),
    };
    log.step("insert the Super Widget, no reviews yet", Product::repo(db).insert(&widget)).await?;

    let mut reviews = all_reviews();
    let newest = reviews.pop().ok_or_else(|| docrel::Error::Invalid {
        what: docrel::Misuse::Application("reviews"),
        message: "none".into(),
    })?;
    log.step("insert 11 reviews: one insert_many, one $push/$sort/$slice", Review::repo(db).insert_many(&reviews))
        .await?;
    log.step("insert Kristina's review 786: the insert and one push", Review::repo(db).insert(&newest)).await?;

    let page = show_page(db, log, "the product page: one read").await?;
    if let Some(first) = page.reviews.first() {
        log.show(format!(
            "newest: {} by {} on {}: {:?}",
            first.review_id,
            first.review_author,
            day(first.published_date),
            first.review_text
        ));
    }
    let Some(oldest_shown) = page.reviews.last().map(|r| r.published_date) else {
        return Err(docrel::Error::Invalid {
            what: docrel::Misuse::Application("reviews"),
            message: "the product keeps no reviews".into(),
        });
    };
    let more: Vec<ReviewSummary> = log
        .step(
            "\"more reviews\": the next 10 from the reviews collection",
            Review::rels()
                .product_id
                .children_of(db, &1)
                .filter(Review::fields().published_date.lt(oldest_shown))
                .limit(10)
                .to_vec(),
        )
        .await?;
    for r in &more {
        log.show(format!("{} by {} on {}: {:?}", r.review_id, r.review_author, day(r.published_date), r.review_text));
    }

    let trina = reviews.iter().find(|r| r.review_id == 785).map(|r| r.id);
    if let Some(trina) = trina {
        log.step(
            "Trina edits her review: the review and the product's copy",
            Review::repo(db)
                .update_by_id(&trina, Review::fields().review_text.set("Nice product. Shipping was slow.".into())),
        )
        .await?;
    }
    let spam = reviews.iter().find(|r| r.review_id == 780).map(|r| r.id);
    if let Some(spam) = spam {
        log.step("a moderator deletes review 780: Pablo's 776 moves in", Review::repo(db).delete_by_id(&spam)).await?;
    }
    let page = show_page(db, log, "the product page again").await?;
    if let Some(r) = page.reviews.iter().find(|r| r.review_id == 785) {
        log.show(format!("785 by {} now reads {:?}", r.review_author, r.review_text));
    }
    let consistent =
        log.step("check the subset against the reviews collection", Product::rels().reviews.check(db, &1)).await?;
    log.show(format!("consistent: {consistent}"));
    Ok(Reviews { kept: page.reviews.iter().map(|r| r.review_id).collect(), consistent })
}

#[tokio::main]
async fn main() {
    common::finish("reviews", run().await);
}

async fn run() -> docrel::Result<()> {
    let (db, log) = common::open("reviews").await?;
    scenario(&db, &log).await?;
    common::done(&db);
    Ok(())
}
