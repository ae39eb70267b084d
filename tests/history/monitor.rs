//! What each operation sent the server, seen through the driver's command
//! monitoring, checked against what it told the gate (`gate.rs`), and the
//! transactions it may have left open ended before it leaves the gate.
//!
//! The gate holds apart a transaction and a plain multi-document write of
//! the same group, which deadlock the test server; it learns which an
//! operation makes from its kind (`gate::entry`), before it runs. What docrel
//! sends for a kind is docrel's to decide (a `transactional_fan_out()` write
//! of a reference alone is plain; an insert of several documents is a
//! transaction), so the entry is checked against the commands the operation
//! really sent: one it did not declare is a [`Inv::Gate`] violation of the
//! history, found on the first operation that makes it rather than on the
//! rare interleaving that hangs the server.
//!
//! The driver calls the handler in the task that sends the command, so a
//! task-local names the operation; a command sent from a task docrel spawns
//! is not seen (none of its writes is today).
//!
//! [`Inv::Gate`]: super::check::Inv::Gate

use super::check::{Inv, Violation};
use super::gate::{Class, Group};
use super::run::Record;
use docrel::bson::{doc, Bson, Document};
use docrel::mongodb::error::ErrorKind;
use docrel::mongodb::event::command::CommandEvent;
use docrel::mongodb::event::EventHandler;
use docrel::mongodb::options::ClientOptions;
use docrel::mongodb::Client;
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};

tokio::task_local! {
    /// What the operation this task is running sent.
    static SEEN: Arc<Mutex<Seen>>;
}

/// What one operation sent.
#[derive(Default, Debug)]
pub struct Seen {
    /// Collections written or read by a statement of a transaction.
    pub transactions: BTreeSet<String>,
    /// Collections written by a plain (no transaction) multi-document
    /// `update` or `delete`: the writes that hold the collection's lock
    /// while they retry a write conflict on the test server.
    pub plain_multi: BTreeSet<String>,
    /// The transactions it ran, by session id.
    sessions: HashMap<Vec<u8>, Txns>,
    /// Its transaction commands in flight, by request id.
    requests: HashMap<i32, Request>,
}

/// The transactions of one session (`lsid`).
#[derive(Debug)]
struct Txns {
    lsid: Document,
    /// Transaction numbers with no commit or abort the server answered.
    unended: BTreeSet<i64>,
    /// The newest number the server answered a command of: it knows that
    /// transaction, so it ended every older one of the session.
    known: i64,
}

/// A command of a transaction in flight: its session, number, and whether
/// it ends the transaction.
#[derive(Debug)]
struct Request {
    session: Vec<u8>,
    number: i64,
    ends: bool,
}

/// The collection a command names, when it names one.
fn collection(command: &Document, name: &str) -> Option<String> {
    command.get_str(name).ok().map(str::to_owned)
}

/// The bytes of a session id (`{id: UUID}`), to key it by.
fn lsid_key(lsid: &Document) -> Vec<u8> {
    match lsid.get("id") {
        Some(Bson::Binary(b)) => b.bytes.clone(),
        other => format!("{other:?}").into_bytes(),
    }
}

/// The collections a client-level `bulkWrite` writes with statements that
/// may touch many documents (its `ops` name namespaces by their index in
/// `nsInfo`).
fn bulk_multi(command: &Document) -> Vec<String> {
    let namespaces: Vec<String> = command
        .get_array("nsInfo")
        .map(|a| a.iter().filter_map(|n| n.as_document()?.get_str("ns").ok().map(str::to_owned)).collect())
        .unwrap_or_default();
    let ops: Vec<&Document> =
        command.get_array("ops").map(|a| a.iter().filter_map(Bson::as_document).collect()).unwrap_or_default();
    ops.into_iter()
        .filter_map(|op| {
            let at = op.get_i32("update").or_else(|_| op.get_i32("delete")).ok()?;
            let multi = op.get_bool("multi").unwrap_or(false);
            let ns = namespaces.get(usize::try_from(at).ok()?)?;
            multi.then(|| ns.split_once('.').map_or(ns.clone(), |(_, c)| c.to_owned()))
        })
        .collect()
}

/// Whether `command` is a plain write that may touch many documents.
fn multi_document(name: &str, command: &Document) -> bool {
    let any = |field: &str, hit: &dyn Fn(&Document) -> bool| {
        command.get_array(field).is_ok_and(|a| a.iter().any(|e| e.as_document().is_some_and(hit)))
    };
    match name {
        "update" => any("updates", &|u| u.get_bool("multi").unwrap_or(false)),
        "delete" => any("deletes", &|d| matches!(d.get("limit"), Some(Bson::Int32(0) | Bson::Int64(0)))),
        _ => false,
    }
}

impl Seen {
    fn started(&mut self, name: &str, command: &Document, request_id: i32) {
        if command.get_bool("autocommit").ok() != Some(false) {
            if name == "bulkWrite" {
                self.plain_multi.extend(bulk_multi(command));
            } else if multi_document(name, command) {
                self.plain_multi.extend(collection(command, name));
            }
            return;
        }
        let (Ok(lsid), Ok(number)) = (command.get_document("lsid"), command.get_i64("txnNumber")) else { return };
        let ends = matches!(name, "commitTransaction" | "abortTransaction");
        if !ends {
            self.transactions.extend(collection(command, name));
        }
        let session = lsid_key(lsid);
        let txns = self.sessions.entry(session.clone()).or_insert_with(|| Txns {
            lsid: lsid.clone(),
            unended: BTreeSet::new(),
            known: 0,
        });
        txns.unended.insert(number);
        self.requests.insert(request_id, Request { session, number, ends });
    }

    /// A command of a transaction answered: `ok`, or `gone` when the
    /// server said it has no such transaction (NoSuchTransaction).
    fn answered(&mut self, request_id: i32, ok: bool, gone: bool) {
        let Some(r) = self.requests.remove(&request_id) else { return };
        let Some(txns) = self.sessions.get_mut(&r.session) else { return };
        if ok {
            txns.known = txns.known.max(r.number);
        }
        if gone || (ok && r.ends) {
            txns.unended.remove(&r.number);
        }
    }

    /// The sessions whose transaction may still be open on the server: one
    /// no answered commit or abort ended, and no newer one of the session
    /// the server knows (a cut connection, a fail point on the commit, an
    /// abort the driver could not send).
    pub fn maybe_open(&self) -> Vec<Document> {
        let open = |t: &&Txns| t.unended.last().is_some_and(|n| *n >= t.known);
        self.sessions.values().filter(open).map(|t| t.lsid.clone()).collect()
    }

    /// What the operation sent that `entry` did not declare, if anything.
    pub fn undeclared(&self, entry: &[(Group, Class)]) -> Option<String> {
        let class_of = |coll: &str| group_of_collection(coll).map(|g| entry.iter().find(|(e, _)| *e == g));
        let mut out = Vec::new();
        for coll in &self.transactions {
            match class_of(coll) {
                Some(Some((_, Class::Transaction | Class::Both))) | None => {}
                Some(found) => out.push(format!("a transaction on `{coll}` (entered {found:?})")),
            }
        }
        for coll in &self.plain_multi {
            match class_of(coll) {
                Some(Some((_, Class::Plain | Class::Both))) | None => {}
                Some(found) => out.push(format!("a plain multi-document write on `{coll}` (entered {found:?})")),
            }
        }
        (!out.is_empty()).then(|| out.join("; "))
    }
}

/// The operations of a history (seed `seed`) that sent what their entry to
/// the gate did not declare.
pub fn violations(seed: u64, records: &[Record]) -> Vec<Violation> {
    let what = |r: &Record, u: &String| format!("seed {seed}: w{}#{} {} sent {u}", r.worker, r.seq, r.op);
    records.iter().filter_map(|r| Some(Violation { inv: Inv::Gate, what: what(r, r.undeclared.as_ref()?) })).collect()
}

/// The group of a collection of the histories; `None` for docrel's own
/// collections and the checker's, which no transaction writes.
pub fn group_of_collection(coll: &str) -> Option<Group> {
    Some(match coll {
        "parts" | "products" | super::rule_change::HOLDERS => Group::Catalog,
        "people" | "tasks" => Group::People,
        "items" | "reviews" => Group::Reviews,
        "posts" | "comment_pages" => Group::Posts,
        _ => return None,
    })
}

/// Makes a client report its commands to the operation running them.
pub fn install(options: &mut ClientOptions) {
    let previous = options.command_event_handler.take();
    options.command_event_handler = Some(EventHandler::callback(move |event: CommandEvent| {
        let _ = SEEN.try_with(|seen| {
            let Ok(mut seen) = seen.lock() else { return };
            match &event {
                CommandEvent::Started(e) => seen.started(&e.command_name, &e.command, e.request_id),
                CommandEvent::Succeeded(e) => seen.answered(e.request_id, true, false),
                CommandEvent::Failed(e) => {
                    // NoSuchTransaction: the server has no such transaction open.
                    let gone = matches!(&*e.failure.kind, ErrorKind::Command(c) if c.code == 251);
                    seen.answered(e.request_id, false, gone)
                }
                _ => {}
            }
        });
        if let Some(EventHandler::Callback(next)) = &previous {
            next(event);
        }
    }));
}

/// Runs `work` as one operation, returning what it sent.
pub async fn watch<F: Future>(work: F) -> (F::Output, Seen) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let out = SEEN.scope(seen.clone(), work).await;
    let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner()));
    (out, seen)
}

/// Ends on the server every transaction `seen` may have left open, with
/// `killSessions` on `janitor` (a client no fail point targets), so that
/// the operation leaves the gate with none of its transactions open: a
/// plain multi-document write let in after it would otherwise wait on
/// that transaction's documents, holding the collection, until the
/// server reaps it. A session whose transaction did end is not killed: the
/// driver may have handed it to another operation meanwhile.
pub async fn end_open(janitor: &Client, seen: &Seen) -> Result<(), String> {
    let open = seen.maybe_open();
    if open.is_empty() {
        return Ok(());
    }
    let command = doc! {"killSessions": open.into_iter().map(Bson::Document).collect::<Vec<_>>()};
    janitor.database("admin").run_command(command).await.map(drop).map_err(|e| format!("killSessions: {e}"))
}
