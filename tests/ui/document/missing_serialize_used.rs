#[allow(unused_imports)]
use docrel::bson::oid::ObjectId;
use docrel::{Document, Embedded, View};
use serde::{Deserialize, Serialize};

// `Part` forgot `Serialize`: one error, at `Part`, saying to derive it;
// nothing at the documents, elements and views that name it, nor where it is used.
#[derive(Document, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Embedded, Serialize, Deserialize)]
struct PartRef {
    id: ObjectId,
    #[denormalize(from = Part::name)]
    name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "kits")]
struct Kit {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(many, to = Part, max = 10)]
    parts: Vec<PartRef>,
    #[reference(to = Part)]
    main_part: ObjectId,
    #[denormalize(from = Part::name, via = main_part)]
    main_part_name: String,
}

#[derive(View, Deserialize)]
#[view(of = Part)]
struct PartName {
    name: String,
}

#[allow(dead_code)]
async fn use_it(db: &docrel::mongodb::Database, part: &Part) -> docrel::Result<()> {
    Part::repo(db).insert(part).await?;
    let parts = Part::repo(db).find(Part::fields().name.eq("bolt")).await?;
    let _names = Part::repo(db).find(Part::fields().name.eq("bolt")).view::<PartName>().await?;
    let ids: Vec<ObjectId> = parts.iter().map(|p| p.id).collect();
    let kits = Kit::repo(db).find(Kit::fields().main_part.is_in(&ids)).await?;
    let _loaded = Kit::rels().parts.load::<Part>(db, &kits).await?;
    Ok(())
}

fn main() {}
