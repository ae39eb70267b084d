//! Bad input and reads that decide writes (issue 27 items 6 and 17).
//!
//! Several tests here watch the commands a client sends (command
//! monitoring): what a read asked of the deployment (`$readPreference`)
//! and how long the `$in` lists of a write's reads are.

use crate::raw;
use docrel::bson::{doc, Bson, Document as BsonDoc};
use docrel::mongodb::event::command::CommandEvent;
use docrel::mongodb::event::EventHandler;
use docrel::mongodb::{Client, Database};
use docrel::testing::TestDb;
use docrel::{Document, Error, View};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

// ---- the commands a client sent ---------------------------------------------------------------

/// One command as sent: its name, the collection it names, the mode of its
/// `$readPreference` (empty when it carries none) and the command itself.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    name: String,
    target: String,
    read_preference: String,
    command: BsonDoc,
}

/// Every command a client sent, in order.
#[derive(Clone, Default)]
pub(crate) struct Commands(Arc<Mutex<Vec<Sent>>>);

impl Commands {
    pub(crate) fn mark(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    pub(crate) fn since(&self, mark: usize) -> Vec<Sent> {
        self.0.lock().unwrap()[mark..].to_vec()
    }
}

/// A client on the test server whose URI adds `extra` options, recording
/// every command it sends; its database is `t`'s (dropped with it).
pub(crate) async fn watched(t: &TestDb, extra: &str) -> docrel::Result<(Client, Database, Commands)> {
    let base = std::env::var("MONGODB_URI").expect("MONGODB_URI");
    let uri = if extra.is_empty() {
        base
    } else if base.contains('?') {
        format!("{base}&{extra}")
    } else {
        format!("{}/?{extra}", base.trim_end_matches('/'))
    };
    let commands = Commands::default();
    let log = commands.0.clone();
    let mut options = docrel::client::options(&uri).await?;
    options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
        if let CommandEvent::Started(started) = event {
            let command: BsonDoc = started.command.clone();
            let target = command.get_str(&started.command_name).unwrap_or_default().to_owned();
            let read_preference = command
                .get_document("$readPreference")
                .ok()
                .and_then(|r| r.get_str("mode").ok())
                .unwrap_or_default()
                .to_owned();
            log.lock().unwrap().push(Sent { name: started.command_name.clone(), target, read_preference, command });
        }
    }));
    let client = docrel::connect_with(&uri, options).await?;
    let db = client.database(t.db.name());
    Ok((client, db, commands))
}

/// The longest `$in` or `$nin` list anywhere in `value`.
fn longest_in(value: &Bson) -> usize {
    match value {
        Bson::Document(d) => d
            .iter()
            .map(|(k, v)| match (k.as_str(), v) {
                ("$in" | "$nin", Bson::Array(list)) => list.len().max(longest_in(v)),
                _ => longest_in(v),
            })
            .max()
            .unwrap_or(0),
        Bson::Array(list) => list.iter().map(longest_in).max().unwrap_or(0),
        _ => 0,
    }
}

/// The commands of `sent` whose `$in`/`$nin` lists are longer than `most`, in words.
pub(crate) fn over(sent: &[Sent], most: usize) -> Vec<String> {
    sent.iter()
        .filter_map(|s| {
            let n = longest_in(&Bson::Document(s.command.clone()));
            (n > most).then(|| format!("{} {}: $in of {n}", s.name, s.target))
        })
        .collect()
}

// ---- item 17a: a password with URI characters is never printed --------------------------------

/// Passwords holding each character that ends a part of a URI. `redact`
/// took the user info to end at the first `?` (the query), so a raw `?`
/// in the password left it all in the text, and `InvalidUri` printed it.
#[tokio::test]
async fn a_password_with_uri_characters_is_never_printed() {
    for c in ['?', '@', '/', ':', '#'] {
        let password = format!("SECRETa{c}bSECRET");
        for uri in [
            format!("mongodb://ann:{password}@127.0.0.1:27017/db?w=1"),
            format!("mongodb://ann:{password}@127.0.0.1:27017"),
            format!("mongodb+srv://ann:{password}@cluster.example.com/?retryWrites=true"),
        ] {
            let shown = docrel::client::redact(&uri);
            assert!(!shown.contains("SECRET") && !shown.contains("a{c}b"), "{uri} shown as {shown}");
            assert!(shown.contains("example.com") || shown.contains("127.0.0.1:27017"), "the host stays: {shown}");
            assert!(shown.starts_with("mongodb") && shown.contains("ann"), "the user stays: {shown}");
            // The driver refuses most of these; whatever it says, the password is not in it.
            if uri.starts_with("mongodb+srv") {
                continue; // parsing looks the name up in DNS
            }
            if let Err(e) = docrel::client::options(&uri).await {
                for text in [e.to_string(), format!("{e:?}")] {
                    assert!(!text.contains("SECRET"), "{uri}: the error prints the password: {text}");
                }
                let fix = format!("`{c}`, which a connection string must percent-encode (`%{:02X}`)", c as u32);
                assert!(e.to_string().contains(&fix), "{uri}: the error says what to encode: {e}");
            }
        }
    }
    // Every `@` before the host is user info, whatever follows it.
    assert_eq!(docrel::client::redact("mongodb://u:p?x@y@h:1/db?w=1"), "mongodb://u:***@h:1/db?w=1");
    assert_eq!(docrel::client::redact("mongodb://u:p@h:1/db?w=1"), "mongodb://u:***@h:1/db?w=1");
    assert_eq!(docrel::client::redact("mongodb://h:1/db?w=1"), "mongodb://h:1/db?w=1");
}

// ---- item 17c: string ids are values, never expressions ---------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sec_boards")]
struct SecBoard {
    #[serde(rename = "_id")]
    id: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sec_notes")]
struct SecNote {
    #[serde(rename = "_id")]
    id: i32,
    #[parent_ref(to = SecBoard, sort = "-n")]
    board: String,
    n: i32,
}

/// `latest_per_parent` of parents whose string ids look like expressions
/// (`$foo`, a field path; `$$ROOT`, a variable) finds their children, and
/// only theirs. Before, `$documents` evaluated the ids: `{_id: "$foo"}`
/// became a document without `_id`.
#[tokio::test]
async fn latest_per_parent_takes_ids_as_values() -> docrel::Result<()> {
    let t = TestDb::new("sec_literal").await?;
    let ids: Vec<String> = ["$foo", "$$ROOT", "plain", "$_id"].map(String::from).to_vec();
    for id in &ids {
        SecBoard::repo(&t.db).insert(&SecBoard { id: id.clone() }).await?;
    }
    let mut notes = Vec::new();
    for (b, board) in ids.iter().enumerate() {
        for k in 0..3 {
            notes.push(SecNote { id: (b * 10 + k) as i32, board: board.clone(), n: k as i32 });
        }
    }
    SecNote::repo(&t.db).insert_many(&notes).await?;
    let latest = SecNote::rels().board.latest_per_parent(&t.db, &ids, 2).await?;
    for (b, board) in ids.iter().enumerate() {
        let got: Vec<i32> = latest.of(b).map(|n| n.id).collect();
        assert_eq!(got, [(b * 10 + 2) as i32, (b * 10 + 1) as i32], "the latest of {board}");
        assert!(latest.of(b).all(|n| &n.board == board));
    }
    Ok(())
}

// ---- item 17d: no unbounded `$in` on the insert side ------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sec_hosts")]
struct SecHost {
    #[serde(rename = "_id")]
    id: i32,
    ip: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sec_feeds")]
struct SecFeed {
    #[serde(rename = "_id")]
    id: i32,
    #[embed(max = 3, subset_of = SecLine, sort = "-n", key = n)]
    newest: Vec<SecLineSummary>,
}

#[derive(View, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[view(of = SecLine)]
struct SecLineSummary {
    n: i32,
    ip: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sec_lines")]
struct SecLine {
    #[serde(rename = "_id")]
    id: i32,
    n: i32,
    #[reference(to = SecHost, on_delete = restrict)]
    host: i32,
    #[denormalize(from = SecHost::ip, via = host)]
    ip: String,
    #[parent_ref(to = SecFeed)]
    feed: i32,
}

/// More lines than one page of ids, referring to hosts of which a few
/// exist, then more hosts than a page, a few of them referred to: every
/// line lands, those whose host exists get its copy (filled, or fanned out
/// when the host arrives), the feed its 3 newest, and no read of these
/// writes sends an `$in` longer than a page. Before, the fill and its
/// confirmation, the subset's push and its check, and the fan-out of the
/// inserted hosts each sent one `$in` of all the ids.
#[tokio::test]
async fn inserts_of_more_than_a_page_read_a_page_at_a_time() -> docrel::Result<()> {
    let t = TestDb::new("sec_pages").await?;
    let (_client, db, commands) = watched(&t, "").await?;
    let page = docrel::relations::on_delete::BATCH as i32;
    let n = page + 150;
    SecFeed::repo(&db).insert(&SecFeed { id: 1, newest: vec![] }).await?;
    SecLine::repo(&db).ensure_indexes().await?;
    let host = |i: i32| SecHost { id: i, ip: format!("10.0.{}.{}", i / 256, i % 256) };
    let lines: Vec<SecLine> = (0..n).map(|i| SecLine { id: i, n: i, host: i, ip: String::new(), feed: 1 }).collect();
    SecHost::repo(&db).insert_many(&(0..100).map(host).collect::<Vec<_>>()).await?;
    let mark = commands.mark();
    SecLine::repo(&db).insert_many(&lines).await?;
    // Hosts 100..110 are referred to; the thousand after them are not.
    let later: Vec<SecHost> = (100..110).chain(10_000..10_000 + page).map(host).collect();
    SecHost::repo(&db).insert_many(&later).await?;
    let long = over(&commands.since(mark), page as usize);
    assert!(long.is_empty(), "reads with more than {page} ids: {long:?}");

    let stored = t.db.collection::<BsonDoc>("sec_lines");
    assert_eq!(stored.count_documents(doc! {}).await.unwrap(), n as u64, "every line landed");
    for i in (0..110).chain([500, n - 1]) {
        let line = stored.find_one(doc! {"_id": i}).await.unwrap().expect("landed");
        let want = if i < 110 { host(i).ip } else { String::new() };
        assert_eq!(line.get_str("ip").unwrap(), want, "line {i}");
    }
    let feed = raw(&t, "sec_feeds", 1).await.unwrap();
    let newest: Vec<i32> =
        feed.get_array("newest").unwrap().iter().map(|s| s.as_document().unwrap().get_i32("n").unwrap()).collect();
    assert_eq!(newest, [n - 1, n - 2, n - 3]);
    Ok(())
}

/// `referrers_of_many` of more targets than a chunk reads them a chunk at
/// a time, and groups what it found as one read would.
#[tokio::test]
async fn referrers_of_many_targets_are_read_a_chunk_at_a_time() -> docrel::Result<()> {
    let t = TestDb::new("sec_referrers").await?;
    let (_client, db, commands) = watched(&t, "").await?;
    SecFeed::repo(&db).insert(&SecFeed { id: 2, newest: vec![] }).await?;
    let hosts: Vec<SecHost> = (0..30).map(|i| SecHost { id: i, ip: format!("10.1.0.{i}") }).collect();
    SecHost::repo(&db).insert_many(&hosts).await?;
    let lines: Vec<SecLine> =
        (0..60).map(|i| SecLine { id: i, n: i, host: i % 30, ip: String::new(), feed: 2 }).collect();
    SecLine::repo(&db).insert_many(&lines).await?;
    // Targets that exist and many that do not: more than a chunk of them.
    let targets: Vec<i32> = (0..docrel::load::DEFAULT_CHUNK as i32 + 10).rev().collect();
    let mark = commands.mark();
    let found = SecLine::rels().host.referrers_of_many(&db, &targets).await?;
    let long = over(&commands.since(mark), docrel::load::DEFAULT_CHUNK);
    assert!(long.is_empty(), "reads with more than {} ids: {long:?}", docrel::load::DEFAULT_CHUNK);
    for (i, target) in targets.iter().enumerate() {
        let mut got: Vec<i32> = found.of(i).map(|l| l.id).collect();
        got.sort();
        let want: Vec<i32> = if *target < 30 { vec![*target, *target + 30] } else { vec![] };
        assert_eq!(got, want, "referrers of host {target}");
    }
    // A chunk of the caller's size.
    let mark = commands.mark();
    let found = SecLine::rels().host.referrers_of_many(&db, &targets[targets.len() - 30..]).chunk(7).await?;
    let finds = commands.since(mark).iter().filter(|s| s.name == "find").count();
    assert_eq!(finds, 5, "30 targets in chunks of 7");
    assert_eq!(found.of(0).count(), 2);
    Ok(())
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sec_racks")]
struct SecRack {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(many, to = SecHost, max = 10)]
    hosts: Vec<i32>,
}

/// A document referring to targets of several chunks is listed once under
/// each of them.
#[tokio::test]
async fn referrers_of_targets_in_several_chunks_are_listed_once_each() -> docrel::Result<()> {
    let t = TestDb::new("sec_racks").await?;
    SecRack::repo(&t.db).insert(&SecRack { id: 1, hosts: vec![0, 3, 4] }).await?;
    SecRack::repo(&t.db).insert(&SecRack { id: 2, hosts: vec![1, 4] }).await?;
    let found = SecRack::rels().hosts.referrers_of_many(&t.db, &[0, 1, 2, 3, 4]).chunk(2).await?;
    let ids = |i: usize| found.of(i).map(|r| r.id).collect::<Vec<_>>();
    assert_eq!((ids(0), ids(1), ids(2), ids(3), ids(4)), (vec![1], vec![2], vec![], vec![1], vec![1, 2]));
    Ok(())
}

// ---- item 6: reads that decide writes go to the primary ---------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sec_owners")]
struct SecOwner {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(many, to = SecTask, inverse = owner, max = 10)]
    tasks: Vec<i32>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "sec_tasks")]
struct SecTask {
    #[serde(rename = "_id")]
    id: i32,
    #[reference(to = SecOwner, inverse = tasks)]
    owner: Option<i32>,
}

/// On a client whose read preference is `secondaryPreferred`, every read
/// that decides a write is sent to the primary: the read-back of an
/// `update_many` of sources, the holders and sources a repair reads, the
/// count of a `restrict` rule. On a direct connection the driver sends a
/// read for the primary as `primaryPreferred` and the client's own as
/// `secondaryPreferred`; before, the restrict count followed the client.
#[tokio::test]
async fn reads_that_decide_writes_go_to_the_primary() -> docrel::Result<()> {
    let t = TestDb::new("sec_primary").await?;
    let (_client, db, commands) = watched(&t, "readPreference=secondaryPreferred").await?;
    SecFeed::repo(&db).insert(&SecFeed { id: 3, newest: vec![] }).await?;
    SecHost::repo(&db).insert(&SecHost { id: 1, ip: "10.2.0.1".into() }).await?;
    SecLine::repo(&db).insert(&SecLine { id: 1, n: 1, host: 1, ip: String::new(), feed: 3 }).await?;
    // The client's own reads follow its preference.
    let mark = commands.mark();
    SecLine::repo(&db).get(&1).await?;
    assert_eq!(commands.since(mark)[0].read_preference, "secondaryPreferred");

    let mark = commands.mark();
    let rename = SecHost::fields().ip.set("10.2.0.2".into());
    SecHost::repo(&db).update_many(SecHost::fields().id.eq(1), rename).await?;
    t.db.collection::<BsonDoc>("sec_lines").update_one(doc! {"_id": 1}, doc! {"$set": {"ip": "stale"}}).await.unwrap();
    let report = docrel::check::copies::<SecHost>().repair(&db).run().await?;
    assert_eq!(report.fixed, 1);
    let err = SecHost::repo(&db).delete_by_id(&1).await.unwrap_err();
    assert!(matches!(err, Error::StillReferenced { .. }), "{err}");
    // A link checks that both sides exist, in a transaction of docrel's own.
    SecOwner::repo(&db).insert(&SecOwner { id: 1, tasks: vec![] }).await?;
    SecTask::repo(&db).insert(&SecTask { id: 1, owner: None }).await?;
    SecOwner::rels().tasks.link(&db, &1, &1).await?;
    SecRack::repo(&db).insert(&SecRack { id: 1, hosts: vec![] }).await?;
    SecRack::rels().hosts.link(&db, &1, &1).await?;
    let rename = SecHost::fields().ip.set("10.2.0.3".into());
    SecHost::repo(&db).transactional_fan_out().update_by_id(&1, rename).await?;

    let reads: Vec<Sent> = commands
        .since(mark)
        .into_iter()
        .filter(|s| ["find", "aggregate", "count", "distinct"].contains(&s.name.as_str()))
        .collect();
    assert!(reads.len() >= 4, "the read-back, the repair's two reads, the count: {reads:?}");
    let secondary: Vec<String> = reads
        .iter()
        .filter(|s| s.read_preference != "primaryPreferred")
        .map(|s| format!("{} {} ({})", s.name, s.target, s.read_preference))
        .collect();
    assert!(secondary.is_empty(), "reads that decide writes not sent to the primary: {secondary:?}");
    assert_eq!(raw(&t, "sec_lines", 1).await.unwrap().get_str("ip").unwrap(), "10.2.0.3");
    assert!(raw(&t, "sec_hosts", 1).await.is_some());
    assert_eq!(raw(&t, "sec_owners", 1).await.unwrap().get_array("tasks").unwrap(), &vec![Bson::Int32(1)]);
    assert_eq!(raw(&t, "sec_tasks", 1).await.unwrap().get_i32("owner").unwrap(), 1);
    assert_eq!(raw(&t, "sec_racks", 1).await.unwrap().get_array("hosts").unwrap(), &vec![Bson::Int32(1)]);
    Ok(())
}
