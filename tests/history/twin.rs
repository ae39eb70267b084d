//! A second database in the same process, on the same client (issue 38,
//! review 4: the stored schema was one graph for the whole process, so
//! rules published in one database ran in another). Beside a history that
//! changes a rule online, the twin holds the same holders (`h_rc_labels`,
//! inserted raw with copies no rule wrote) and parts and products of its
//! own, and a task renames those parts and products through docrel for the
//! whole history. No rule is published in the twin, so its holders must
//! stay exactly as inserted: a copy written there is a rule of the
//! history's database run in another.

use super::check::{Inv, Violation};
use super::rule_change::HOLDERS;
use super::schema::{Part, Product};
use docrel::bson::{doc, oid::ObjectId, Document};
use docrel::mongodb::Database;
use futures::TryStreamExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the twin's holders copy until the end: no rule of theirs exists.
const UNTOUCHED: &str = "twin: no rule here";

/// The twin database and its renaming task.
pub struct Twin {
    db: Database,
    stop: Arc<AtomicBool>,
    renames: tokio::task::JoinHandle<Result<usize, String>>,
}

impl Twin {
    /// Makes the twin of `of` (named after it) and starts renaming.
    pub async fn start(of: &Database) -> Result<Twin, String> {
        let db = of.client().database(&format!("{}_tw", of.name()));
        let (part, product) = (ObjectId::new(), ObjectId::new());
        let named = |what: &str| format!("twin {what}");
        let insert = |coll: &str, d: Document| {
            let coll = db.collection::<Document>(coll);
            async move { coll.insert_one(d).await.map(|_| ()).map_err(|e| e.to_string()) }
        };
        insert("products", doc! {"_id": product, "name": named("product"), "parts": []}).await?;
        insert(
            "parts",
            doc! {"_id": part, "name": named("part"), "product": product, "productName": named("product"),
            "qty": 1},
        )
        .await?;
        let holder = doc! {"_id": 1, "ref": product, "name": UNTOUCHED, "refs": [{"id": part, "name": UNTOUCHED}]};
        insert(HOLDERS, holder).await?;
        let stop = Arc::new(AtomicBool::new(false));
        let renames = tokio::spawn(rename(db.clone(), stop.clone(), (part, product)));
        Ok(Twin { db, stop, renames })
    }

    /// The twin's database.
    pub fn db(&self) -> &Database {
        &self.db
    }

    /// Stops renaming; the twin's violations; drops the twin.
    pub async fn conclude(mut self, seed: u64) -> Result<Vec<Violation>, String> {
        self.stop.store(true, Ordering::SeqCst);
        let renamed = (&mut self.renames).await.map_err(|e| e.to_string())??;
        let holders: Vec<Document> = self
            .db
            .collection::<Document>(HOLDERS)
            .find(doc! {})
            .await
            .map_err(|e| e.to_string())?
            .try_collect()
            .await
            .map_err(|e| e.to_string())?;
        self.db.drop().await.map_err(|e| e.to_string())?;
        let inserted = doc! {"_id": 1, "name": UNTOUCHED, "refs": [{"name": UNTOUCHED}]};
        let mut out = Vec::new();
        for h in &holders {
            let refs: Vec<&str> = h
                .get_array("refs")
                .map(|a| a.iter().filter_map(|e| e.as_document()?.get_str("name").ok()).collect())
                .unwrap_or_default();
            if h.get_str("name").ok() != Some(UNTOUCHED) || refs != [UNTOUCHED] || h.contains_key("_docrel") {
                let what = format!(
                    "seed {seed}: the twin database's holder {h} was written (inserted as {inserted}): a rule \
                     published in the history's database ran in another"
                );
                out.push(Violation { inv: Inv::I1, what });
            }
        }
        if renamed == 0 {
            let what = format!("seed {seed}: the twin's renames never ran, so the twin checked nothing");
            out.push(Violation { inv: Inv::Liveness, what });
        }
        Ok(out)
    }
}

impl Drop for Twin {
    /// A history that stopped before its end stops the renames too.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Renames the twin's part and product through docrel until `stop`.
async fn rename(db: Database, stop: Arc<AtomicBool>, (part, product): (ObjectId, ObjectId)) -> Result<usize, String> {
    let mut n = 0;
    // The history's fail points name this client's appName: a rename they
    // cut is simply not counted.
    while !stop.load(Ordering::SeqCst) {
        let k = n + 1;
        let part_renamed = Part::repo(&db).update_by_id(&part, Part::fields().name.set(format!("twin part {k}"))).await;
        let product_renamed =
            Product::repo(&db).update_by_id(&product, Product::fields().name.set(format!("twin product {k}"))).await;
        if part_renamed.is_ok() && product_renamed.is_ok() {
            n = k;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Ok(n)
}
