//! The patrons of the MongoDB manual's *Model One-to-Many Relationships with
//! Embedded Documents*: a patron's few addresses are embedded in the patron,
//! so one read returns everything; the array is bounded, and a push that
//! would pass the bound is refused without writing anything.
//!
//! ```text
//! patrons: {_id: "joe", name, addresses: [{street, city, state, zip}]}
//! ```
//!
//! Run: `MONGODB_URI=mongodb://... cargo run --example patrons` (database
//! `DOCREL_DB`, default `docrel_patrons`; dropped first, left in place).

use docrel::mongodb::Database;
use docrel::{Document, Error};
use serde::{Deserialize, Serialize};

#[path = "common/mod.rs"]
pub mod common;

// ANCHOR: schema
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Address {
    pub street: String,
    pub city: String,
    pub state: String,
    pub zip: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[document(collection = "patrons")]
pub struct Patron {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    /// "one-to-few": at most 3.
    #[embed(max = 3)]
    pub addresses: Vec<Address>,
}
// ANCHOR_END: schema

fn address(street: &str, city: &str, zip: &str) -> Address {
    Address { street: street.into(), city: city.into(), state: "MA".into(), zip: zip.into() }
}

/// What the push over the bound was told.
#[derive(Debug)]
pub struct Patrons {
    pub refused: Option<Error>,
}

pub async fn scenario(db: &Database, log: &common::Log) -> docrel::Result<Patrons> {
    log.title("patrons: addresses embedded in the patron, at most 3 (`#[embed(max = 3)]`)");
    let validator =
        log.step("install the bound as a $jsonSchema validator", Patron::repo(db).ensure_validator()).await?;
    if let Some(v) = validator {
        log.show(v);
    }
    let joe = Patron {
        id: "joe".into(),
        name: "Joe Bookreader".into(),
        addresses: vec![
            address("123 Fake Street", "Faketon", "12345"),
            address("1 Some Other Street", "Boston", "12345"),
        ],
    };
    log.step("insert Joe Bookreader with his 2 addresses", Patron::repo(db).insert(&joe)).await?;

    let joe_id = joe.id.clone();
    let third = address("7 Summer Street", "Salem", "01970");
    log.step("push a third address", Patron::repo(db).update_by_id(&joe_id, Patron::fields().addresses.push([third])))
        .await?;

    let fourth = address("99 Winter Street", "Lowell", "01852");
    let refused = log
        .step("push a fourth address: refused, nothing written", async {
            match Patron::repo(db).update_by_id(&joe_id, Patron::fields().addresses.push([fourth])).await {
                Err(e @ Error::EmbedFull { .. }) => Ok(Some(e)),
                Err(other) => Err(other),
                Ok(_) => Ok(None),
            }
        })
        .await?;
    match &refused {
        Some(e) => log.show(format!("EmbedFull: {e}")),
        None => log.show("the push went through: the bound did not hold"),
    }

    let stored =
        log.step("read Joe back: the patron and every address in one read", Patron::repo(db).require(&joe_id)).await?;
    log.show(format!("{} has {} addresses:", stored.name, stored.addresses.len()));
    for a in &stored.addresses {
        log.show(format!("  {}, {}, {} {}", a.street, a.city, a.state, a.zip));
    }
    Ok(Patrons { refused })
}

#[tokio::main]
async fn main() {
    common::finish("patrons", run().await);
}

async fn run() -> docrel::Result<()> {
    let (db, log) = common::open("patrons").await?;
    scenario(&db, &log).await?;
    common::done(&db);
    Ok(())
}
