//! What the fleet tests of an N:M array made two-way and one-way share:
//! the two versions of the types (`v1` one-way, `v2` two-way), the writes
//! each version makes, and the check that both sides agree.

#![allow(dead_code)]

use super::faults::Seeded;
use docrel::bson::{doc, oid::ObjectId, Document as BsonDoc};
use docrel::Error;
use futures::TryStreamExt;
use std::collections::{BTreeMap, BTreeSet};

pub const COURSES: usize = 6;

/// The old version: a student holds the ids of its courses, one-way.
pub mod v1 {
    use docrel::bson::oid::ObjectId;
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mi_courses")]
    pub struct Course {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub title: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mi_students")]
    pub struct Student {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub name: String,
        #[reference(many, to = Course, max = 20)]
        pub courses: Vec<ObjectId>,
    }
}

/// The new version: both sides hold the ids of the other.
pub mod v2 {
    use docrel::bson::oid::ObjectId;
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mi_courses")]
    pub struct Course {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub title: String,
        #[serde(default)]
        #[reference(many, to = Student, inverse = courses, max = 500)]
        pub students: Vec<ObjectId>,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mi_students")]
    pub struct Student {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub name: String,
        #[reference(many, to = Course, inverse = students, max = 20)]
        pub courses: Vec<ObjectId>,
    }
}

pub fn err(e: docrel::mongodb::error::Error) -> Error {
    Error::driver("test", "mi", e)
}

pub async fn raw(db: &docrel::mongodb::Database, collection: &str) -> docrel::Result<Vec<BsonDoc>> {
    let coll = db.collection::<BsonDoc>(collection);
    coll.find(doc! {}).sort(doc! {"_id": 1}).await.map_err(err)?.try_collect().await.map_err(err)
}

pub fn ids(d: &BsonDoc, field: &str) -> Vec<ObjectId> {
    d.get_array(field).map(|a| a.iter().filter_map(|i| i.as_object_id()).collect()).unwrap_or_default()
}

/// Some of `of`, drawn by `n`.
pub fn some_of(n: &mut Seeded, of: &[ObjectId]) -> Vec<ObjectId> {
    of.iter().filter(|_| n.below(3) == 0).copied().collect()
}

/// Each version's students as it last wrote them (`None`: deleted).
pub type Model = BTreeMap<ObjectId, Option<Vec<ObjectId>>>;

pub async fn course_ids(db: &docrel::mongodb::Database) -> docrel::Result<Vec<ObjectId>> {
    Ok(raw(db, "mi_courses").await?.iter().filter_map(|c| c.get_object_id("_id").ok()).collect())
}

/// A write that failed, with the student it may have written (`None`: an
/// insert, or a course).
pub struct Unsure(pub Option<ObjectId>, pub Error);

/// One write of the one-way version (`v1`) to one of its students (those
/// it inserts or replaces are `named` so), drawn by `n`, recorded in
/// `model` when it returns `Ok`.
pub async fn one_way_write(
    db: &docrel::mongodb::Database,
    (n, named): (&mut Seeded, &str),
    model: &mut Model,
) -> Result<(), Unsure> {
    let courses = course_ids(db).await.map_err(|e| Unsure(None, e))?;
    let live: Vec<ObjectId> = model.iter().filter(|(_, c)| c.is_some()).map(|(s, _)| *s).collect();
    let (repo, fields) = (v1::Student::repo(db), v1::Student::fields());
    let Some(&s) = live.get(n.below(live.len())) else { return Ok(()) };
    let c = courses[n.below(courses.len())];
    let mine = model.get(&s).cloned().flatten().unwrap_or_default();
    let unsure = |e| Unsure(Some(s), e);
    let after = match n.below(7) {
        0 => {
            repo.update_by_id(&s, fields.courses.push([c])).await.map_err(unsure)?;
            Some([mine, vec![c]].concat())
        }
        1 => {
            repo.update_by_id(&s, fields.courses.pull(&c)).await.map_err(unsure)?;
            Some(mine.into_iter().filter(|x| *x != c).collect())
        }
        2 => {
            let set = some_of(n, &courses);
            repo.update_by_id(&s, fields.courses.set(set.clone())).await.map_err(unsure)?;
            Some(set)
        }
        3 => {
            let set = some_of(n, &courses);
            repo.replace(&v1::Student { id: s, name: named.into(), courses: set.clone() }).await.map_err(unsure)?;
            Some(set)
        }
        4 => {
            let new = v1::Student { id: ObjectId::new(), name: named.into(), courses: some_of(n, &courses) };
            repo.insert(&new).await.map_err(|e| Unsure(None, e))?;
            println!("@op {} inserted {:?} {}", new.id, new.courses, now_ms());
            model.insert(new.id, Some(new.courses));
            return Ok(());
        }
        5 => {
            repo.delete_by_id(&s).await.map_err(unsure)?;
            None
        }
        _ => {
            // A course written whole by a type without `students` keeps them.
            let course = v1::Course { id: c, title: format!("renamed {}", n.below(99)) };
            let began = now_ms();
            v1::Course::repo(db).replace(&course).await.map_err(|e| Unsure(None, e))?;
            println!("@course {c} replaced {began}..{}", now_ms());
            return Ok(());
        }
    };
    println!("@op {s} {after:?} {}", now_ms());
    model.insert(s, after);
    Ok(())
}

pub fn now_ms() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// A version's model, from what its process printed.
pub fn printed(out: &str) -> Model {
    out.lines()
        .filter_map(|l| l.strip_prefix("@student "))
        .map(|l| {
            let (id, courses) = l.split_once(' ').expect("id and courses");
            let courses: Option<Vec<String>> = serde_json::from_str(courses).expect("json");
            let parsed = courses.map(|c| c.iter().map(|h| ObjectId::parse_str(h).unwrap()).collect());
            (ObjectId::parse_str(id).unwrap(), parsed)
        })
        .collect()
}

/// One link or unlink of the two-way version (`v2`) to one of its students.
pub async fn two_way_write(db: &docrel::mongodb::Database, n: &mut Seeded, model: &mut Model) -> Result<(), Unsure> {
    let courses = course_ids(db).await.map_err(|e| Unsure(None, e))?;
    let students: Vec<ObjectId> = model.keys().copied().collect();
    let Some(&s) = students.get(n.below(students.len())) else { return Ok(()) };
    let c = courses[n.below(courses.len())];
    let mine = model.get(&s).cloned().flatten().unwrap_or_default();
    let rels = v2::Student::rels();
    let after = if n.below(2) == 0 {
        rels.courses.link(db, &s, &c).await.map_err(|e| Unsure(Some(s), e))?;
        if mine.contains(&c) {
            mine
        } else {
            [mine, vec![c]].concat()
        }
    } else {
        rels.courses.unlink(db, &s, &c).await.map_err(|e| Unsure(Some(s), e))?;
        mine.into_iter().filter(|x| *x != c).collect()
    };
    model.insert(s, Some(after));
    Ok(())
}

/// Both sides say the same, each link once, and each version's students
/// hold what it last wrote.
pub async fn assert_two_way(
    db: &docrel::mongodb::Database,
    expected: &Model,
) -> docrel::Result<Result<(), Vec<(ObjectId, ObjectId)>>> {
    let students = raw(db, "mi_students").await?;
    let courses = raw(db, "mi_courses").await?;
    let mut forward = BTreeSet::new();
    for s in &students {
        let id = s.get_object_id("_id").unwrap();
        let named = ids(s, "courses");
        if let Some(wanted) = expected.get(&id) {
            assert_eq!(Some(&named), wanted.as_ref(), "student {id} holds what its version last wrote");
        }
        forward.extend(named.into_iter().map(|c| (id, c)));
    }
    for (id, wanted) in expected {
        let stored = students.iter().any(|s| s.get_object_id("_id").ok() == Some(*id));
        assert_eq!(stored, wanted.is_some(), "student {id} is stored exactly when its version did not delete it");
    }
    let mut back = BTreeSet::new();
    for c in &courses {
        let id = c.get_object_id("_id").unwrap();
        let held = ids(c, "students");
        let once: BTreeSet<ObjectId> = held.iter().copied().collect();
        assert_eq!(once.len(), held.len(), "course {id} names each student once: {held:?}");
        assert!(c.get_str("title").is_ok(), "course {id} keeps its title");
        back.extend(held.into_iter().map(|s| (s, id)));
    }
    Ok(if forward == back { Ok(()) } else { Err(forward.symmetric_difference(&back).copied().collect()) })
}

/// Which version of the types writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `v1`: the array is one-way (under a stored two-way, it adopts the
    /// inverse).
    OneWay,
    /// `v2`: both sides declared.
    TwoWay,
}

/// The students named `named` as stored, each with its courses.
pub async fn model_of(db: &docrel::mongodb::Database, named: &str) -> docrel::Result<Model> {
    Ok(raw(db, "mi_students")
        .await?
        .iter()
        .filter(|s| s.get_str("name").ok() == Some(named))
        .map(|s| (s.get_object_id("_id").unwrap(), Some(ids(s, "courses"))))
        .collect())
}

/// Writes the students named `named` as `version` until a document is
/// inserted into `stop` (or 90 s), then prints how many writes returned
/// `Ok` and each student as it last wrote it ([`printed`] reads that).
/// Under fail points a failed write forgets its student.
pub async fn write_until_stopped(
    db: &docrel::mongodb::Database,
    (version, named): (Version, &str),
    seed: u64,
    faulted: bool,
    stop: docrel::mongodb::Collection<BsonDoc>,
) -> docrel::Result<()> {
    let mut model = model_of(db, named).await?;
    let (mut n, until) = (Seeded(11 + seed * 131), std::time::Instant::now() + std::time::Duration::from_secs(90));
    let mut writes = 0;
    while std::time::Instant::now() < until && stop.find_one(doc! {}).await.map_err(err)?.is_none() {
        let wrote = match version {
            Version::OneWay => one_way_write(db, (&mut n, named), &mut model).await,
            Version::TwoWay => two_way_write(db, &mut n, &mut model).await,
        };
        match wrote {
            Ok(()) => writes += 1,
            // A fault: the write may or may not have landed; its student
            // is no longer known exactly, and no longer written.
            Err(Unsure(Some(s), _)) if faulted => drop(model.remove(&s)),
            Err(Unsure(None, _)) if faulted => {}
            Err(Unsure(_, e)) => return Err(e),
        }
    }
    println!("@writes {writes}");
    for (s, courses) in &model {
        let hex: Option<Vec<String>> = courses.as_ref().map(|c| c.iter().map(|i| i.to_hex()).collect());
        println!("@student {s} {}", serde_json::to_string(&hex).expect("json"));
    }
    Ok(())
}

/// Whether the other side's multikey index misses a course a scan finds
/// holding a student of `pairs` ([`super::faults::index_lost`]).
pub async fn index_lost(db: &docrel::mongodb::Database, pairs: &[(ObjectId, ObjectId)]) -> docrel::Result<bool> {
    super::faults::index_lost(db, ("mi_courses", "students"), pairs.iter().map(|(s, _)| *s)).await
}

/// What the server recorded of the documents of `pairs`: every write as
/// its oplog has it (a diff per update, with its transaction), and with
/// `profiled` every command naming them.
pub async fn explain(
    t: &docrel::testing::TestDb,
    pairs: &[(ObjectId, ObjectId)],
    profiled: bool,
) -> docrel::Result<()> {
    let oplog = t.client.database("local").collection::<BsonDoc>("oplog.rs");
    for (s, c) in pairs {
        let mine = doc! {"ns": {"$regex": format!("^{}\\.", t.db.name())}, "o2._id": {"$in": [s, c]}};
        let found: Vec<BsonDoc> = oplog.find(mine).await.map_err(err)?.try_collect().await.map_err(err)?;
        for e in found {
            println!("@oplog {}", format!("{e}").chars().take(700).collect::<String>());
        }
    }
    if !profiled {
        return Ok(());
    }
    for p in raw(&t.db, "system.profile").await? {
        let text = format!("{p}");
        if pairs.iter().any(|(s, c)| text.contains(&s.to_hex()) || text.contains(&c.to_hex())) {
            println!("@profile {}", text.chars().take(900).collect::<String>());
        }
    }
    Ok(())
}
