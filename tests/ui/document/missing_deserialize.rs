#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

// `Part` forgot `Deserialize`: one error, at `Part`, saying to derive it.
#[derive(Document, Serialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "kits")]
struct Kit {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<ObjectId>,
}

#[derive(View, Deserialize)]
#[view(of = Part)]
struct PartName {
    name: String,
}

#[allow(dead_code)]
async fn use_it(db: &docrel::mongodb::Database) -> docrel::Result<()> {
    let part = Part::repo(db).require(&ObjectId::new()).await?;
    let _names = Part::repo(db).find(Part::fields().name.eq(part.name.as_str())).view::<PartName>().await?;
    Ok(())
}

fn main() {}
