//! Issue 42: MongoDB 9.0 changed what a comparison with null means through
//! arrays (`{"a.b": null}` also matches documents where `a` is an empty
//! array or an array of scalars, and `$ne: null` matches fewer). Every
//! filter docrel builds must mean the same on 8.x and 9.0: none compares a
//! dotted path with null. A workload over every place docrel handles
//! absent references (optional references unset by `pull`, `pull` from
//! arrays of ids and from elements, the doctor's dangling and orphan
//! checks, verify and repair) is recorded, and every filter it sent is
//! read.

use crate::watched;
use docrel::bson::{doc, oid::ObjectId, Bson, Document as BsonDoc};
use docrel::testing::TestDb;
use docrel::{Document, Embedded};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "nl_owners")]
struct Owner {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
}

#[derive(Embedded, Serialize, Deserialize, Debug, Clone)]
struct Slot {
    label: String,
    #[reference(to = Owner, on_delete = pull)]
    owner: Option<ObjectId>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "nl_gadgets")]
struct Gadget {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[reference(to = Owner, on_delete = pull)]
    owner: Option<ObjectId>,
    #[reference(many, to = Owner, max = 100, on_delete = pull)]
    fans: Vec<ObjectId>,
    #[embed(max = 5)]
    slots: Vec<Slot>,
}

/// The comparisons with null of a dotted path in a filter (`q`, `filter`,
/// `query`, a `$match`), each with the path it compares.
fn null_comparisons(value: &Bson, path: &str, out: &mut Vec<String>) {
    match value {
        Bson::Document(d) => {
            for (k, v) in d {
                let here = if k.starts_with('$') { path.to_owned() } else { k.clone() };
                let compares_null = match (k.as_str(), v) {
                    (_, Bson::Null) => true,
                    ("$in" | "$nin", Bson::Array(a)) => a.contains(&Bson::Null),
                    _ => false,
                };
                if compares_null && here.contains('.') {
                    out.push(format!("{here}: {k} {v}"));
                }
                null_comparisons(v, &here, out);
            }
        }
        Bson::Array(a) => a.iter().for_each(|v| null_comparisons(v, path, out)),
        _ => {}
    }
}

/// The filters of a command, wherever the command keeps them.
fn filters(command: &BsonDoc) -> Vec<Bson> {
    let mut out = Vec::new();
    for key in ["filter", "query", "q"] {
        out.extend(command.get(key).cloned());
    }
    for key in ["updates", "deletes", "ops"] {
        for statement in command.get_array(key).into_iter().flatten().filter_map(Bson::as_document) {
            out.extend(["q", "filter"].iter().filter_map(|k| statement.get(*k).cloned()));
        }
    }
    for stage in command.get_array("pipeline").into_iter().flatten().filter_map(Bson::as_document) {
        out.extend(stage.get("$match").cloned());
    }
    out
}

#[tokio::test]
async fn no_filter_docrel_sends_compares_a_dotted_path_with_null() -> docrel::Result<()> {
    let t = TestDb::new("nl_nulls").await?;
    let (_client, db, sent) = watched(&t, "appName=nl").await?;
    let (a, b) = (Owner { id: ObjectId::new(), name: "a".into() }, Owner { id: ObjectId::new(), name: "b".into() });
    Owner::repo(&db).insert_many(&[a.clone(), b.clone()]).await?;
    let slot = |label: &str, owner: Option<ObjectId>| Slot { label: label.into(), owner };
    let gadgets = [
        Gadget { id: ObjectId::new(), owner: Some(a.id), fans: vec![a.id, b.id], slots: vec![slot("x", Some(a.id))] },
        Gadget { id: ObjectId::new(), owner: None, fans: vec![], slots: vec![slot("y", None), slot("z", Some(b.id))] },
    ];
    Gadget::repo(&db).insert_many(&gadgets).await?;
    let g = Gadget::fields();
    Gadget::repo(&db).update_by_id(&gadgets[1].id, g.owner.set(Some(b.id))).await?;
    let _ = Gadget::repo(&db).find(g.owner.eq(Some(b.id))).to_vec().await?;
    // Deletes through every `on_delete` that handles an absent reference.
    Owner::repo(&db).delete_by_id(&a.id).await?;
    // A reference left dangling behind docrel's back, for the checks.
    db.collection::<BsonDoc>("nl_owners").delete_one(doc! {"_id": b.id}).await.expect("raw delete");
    let doctor = docrel::admin::doctor::run(&db, &Default::default()).await?;
    assert!(!doctor.findings.is_empty(), "the doctor finds the dangling reference");
    docrel::admin::checks::verify(&db, None)?.run(|| false, |_, _| {}).await?;
    docrel::admin::checks::repair(&db, None)?.run(|| false, |_, _| {}).await?;

    let stored = t.db.collection::<BsonDoc>("nl_gadgets").find_one(doc! {"_id": gadgets[0].id}).await.expect("find");
    let stored = stored.expect("the gadget");
    assert!(matches!(stored.get("owner"), None | Some(Bson::Null)), "unset: {stored}");
    assert!(stored.get_array("fans").unwrap().iter().all(|f| *f != Bson::ObjectId(a.id)), "pulled: {stored}");

    let sent = sent.lock().unwrap().clone();
    assert!(sent.len() > 10, "the workload was recorded: {}", sent.len());
    let mut dotted = Vec::new();
    for (name, command) in &sent {
        for filter in filters(command) {
            let mut found = Vec::new();
            null_comparisons(&filter, "", &mut found);
            dotted.extend(found.into_iter().map(|c| format!("{name}: {c}")));
        }
    }
    assert!(dotted.is_empty(), "filters comparing a dotted path with null: {dotted:?}");
    Ok(())
}
