// A loader takes as parents a view only when the view carries the
// relation's field: `ProductName` has no `parts`, so it cannot be a parent
// of `Product::rels().parts`.
use docrel::bson::oid::ObjectId;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "products")]
struct Product {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(many, to = Part, max = 100)]
    parts: Vec<ObjectId>,
}

#[derive(View, Deserialize)]
#[view(of = Product)]
struct ProductName {
    name: String,
}

async fn page(db: &docrel::mongodb::Database, names: &[ProductName]) -> docrel::Result<()> {
    let _ = Product::rels().parts.load::<Part>(db, names).await?;
    Ok(())
}

fn main() {
    let _ = page;
}
