//! Keeping a history clear of a deadlock of the test server (SecantusDB
//! 0.7.0b3), not of MongoDB, while transactions still run concurrently
//! with everything they can meet on `mongod`.
//!
//! The deadlock: a plain multi-document write (`updateMany`, `deleteMany`;
//! no transaction) that meets a document an open transaction wrote
//! retries its write conflict forever, holding the collection's lock all
//! along; the transaction's next statement on that collection waits for
//! the lock while holding the transaction's own mutex, so it never commits
//! or aborts; the server's reaper of idle transactions waits for that
//! mutex while holding the registry's lock, so every transaction statement
//! of the server waits from then on. The server never recovers
//! (`storage.py`: `_retry_write_conflicts` around `_update_chunk` and
//! `_delete_chunk`, called under `_coll_lock`; `transactions.py`:
//! `_prune_locked`). `mongod` yields its locks between write-conflict
//! retries, so the transaction goes on. (Inserts, single-document writes
//! and `findAndModify` take the lock inside their retry: they wait, but
//! hold nothing while they do.)
//!
//! The gate: the collections of a history fall in groups no derived data
//! crosses ([`Group`]). An operation enters each group it writes in the
//! class of what docrel sends for it there ([`entry`], from
//! [`Op::sends`]): a transaction, plain writes, or both. Transactions
//! share a group with each other, plain writes with each other; the two
//! exclude each other group by group, and an operation doing both runs
//! alone in the group. So transactions run concurrently with each other
//! anywhere, and with plain writes of the other groups; what is left out
//! is a transaction overlapping a plain write of the same group. Groups
//! are entered in their order, so two operations never wait for each other
//! in a cycle. What an operation's kind declares is checked against the
//! commands it really sends (`monitor.rs`): one it did not declare breaks
//! the history ([`super::check::Inv::Gate`]).
//!
//! The sync worker of a deferred history writes plainly in every group: it
//! holds every group as a plain operation, and is stopped (cut wherever
//! its apply is, as a crash would cut it; it resumes from its stored
//! token) whenever a transaction wants in ([`Gate::transactions`]).
//!
//! A transaction an operation may have left open on the server (a cut
//! connection, a fail point on its commit, an abort the driver could not
//! send) is ended before the operation leaves the gate
//! (`monitor::end_open`): otherwise a plain write let in after it would
//! wait on its documents, holding the collection, until the server reaps
//! it. Should the server hang all the same, the operation that waits is
//! reported ([`super::run::OP_TIMEOUT`]) and the run stops there.

use super::op::{End, Op, Source};
use super::plan::OpKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

/// Collections that derived data links, apart from every other group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Group {
    /// `parts`, `products`.
    Catalog,
    /// `people`, `tasks`.
    People,
    /// `items`, `reviews`.
    Reviews,
    /// `posts`, `comment_pages`.
    Posts,
}

/// Which class of the gate an operation enters, group by group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Class {
    /// It runs a multi-document transaction there.
    Transaction,
    /// It does not (its writes may be plain multi-document ones).
    Plain,
    /// It does both (a transaction and a plain multi-document write, one
    /// after the other): it runs alone in the group.
    Both,
}

impl Class {
    /// The class of an operation that runs a transaction (`txn`) and a
    /// plain multi-document write (`plain`) in a group.
    pub fn of(txn: bool, plain: bool) -> Class {
        match (txn, plain) {
            (true, true) => Class::Both,
            (true, false) => Class::Transaction,
            (false, _) => Class::Plain,
        }
    }
}

/// The group an operation of `kind` writes.
fn group_of(kind: OpKind) -> Option<Group> {
    use OpKind as K;
    let name = format!("{kind:?}");
    let has = |w: &[&str]| w.iter().any(|s| name.contains(s));
    Some(match kind {
        K::Session | K::Repair | K::Verify | K::FaultOn | K::FaultOff => return None,
        K::Reassign | K::LinkTask | K::UnlinkTask | K::UnlinkOwner | K::SetOwnerPlainly => Group::People,
        K::PullSummary | K::RebuildSubset => Group::Reviews,
        K::AppendComment | K::AppendComments | K::BumpPageCount => Group::Posts,
        _ if has(&["Part", "Product"]) => Group::Catalog,
        _ if has(&["Person", "Task"]) => Group::People,
        _ if has(&["Item", "Review"]) => Group::Reviews,
        _ if has(&["Post"]) => Group::Posts,
        _ => return None,
    })
}

/// A write of a person reaches the reviews (their reviewer's copy, its
/// pull) and the items' subsets carrying it, in the person's transaction,
/// after it, or plainly: it enters the reviews as both, alone there.
fn reaches_reviews(kind: OpKind) -> bool {
    format!("{kind:?}").contains("Person")
}

/// A write of reviews fills their reviewer's copy from `people`: in a
/// transaction, a read of that group in it.
fn reads_people(kind: OpKind) -> bool {
    format!("{kind:?}").contains("Review")
}

/// How a write reaching the reviews enters their group.
const REACHES_REVIEWS: (Group, bool, bool) = (Group::Reviews, true, true);

/// The groups `op` writes, in order, each with its class there: what
/// docrel may send for each step ([`Op::sends`]); in a user's transaction,
/// every step's writes are statements of it.
pub fn entry(op: &Op) -> Vec<(Group, Class)> {
    let sends: Vec<(Group, bool, bool)> = match op {
        Op::Repair { source } | Op::Verify { source } => match source {
            Source::Part | Source::Product => vec![(Group::Catalog, false, true)],
            Source::Person => vec![(Group::People, false, true), REACHES_REVIEWS],
        },
        Op::Session { steps, end } if *end != End::NoTxn => steps
            .iter()
            .filter_map(|s| Some((group_of(s.kind())?, true, false)))
            .chain(steps.iter().filter(|s| reaches_reviews(s.kind())).map(|_| REACHES_REVIEWS))
            .chain(steps.iter().filter(|s| reads_people(s.kind())).map(|_| (Group::People, true, false)))
            .collect(),
        _ => op
            .steps()
            .iter()
            .filter_map(|s| {
                let sends = s.sends();
                Some((group_of(s.kind())?, sends.transaction, sends.plain))
            })
            .chain(op.steps().iter().filter(|s| reaches_reviews(s.kind())).map(|_| REACHES_REVIEWS))
            .chain(
                op.steps()
                    .iter()
                    .filter(|s| reads_people(s.kind()) && s.sends().transaction)
                    .map(|_| (Group::People, true, false)),
            )
            .collect(),
    };
    let mut by_group: BTreeMap<Group, (bool, bool)> = BTreeMap::new();
    for (g, txn, plain) in sends {
        let both = by_group.entry(g).or_default();
        *both = (both.0 || txn, both.1 || plain);
    }
    by_group.into_iter().map(|(g, (txn, plain))| (g, Class::of(txn, plain))).collect()
}

/// Whether an operation entering as `entry` runs a transaction somewhere.
pub fn transactional(entry: &[(Group, Class)]) -> bool {
    entry.iter().any(|(_, c)| *c != Class::Plain)
}

/// One group's lock: plain operations hold it shared; transactions hold
/// it exclusively as a class (the first one in takes it, the last one out
/// gives it back; a "lightswitch").
struct GroupLock {
    room: Arc<RwLock<()>>,
    /// Serializes transactions entering, so only the first one waits for the room.
    entering: tokio::sync::Mutex<()>,
    /// How many transactions are in, and the room's guard while any is.
    inside: Arc<Mutex<(usize, Option<OwnedRwLockWriteGuard<()>>)>>,
}

/// A group held by one operation; dropping it lets the group go.
enum Held {
    Plain(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    Alone(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
    Transaction(Arc<Mutex<(usize, Option<OwnedRwLockWriteGuard<()>>)>>),
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Held::Transaction(inside) = self {
            if let Ok(mut i) = inside.lock() {
                i.0 -= 1;
                if i.0 == 0 {
                    i.1 = None;
                }
            }
        }
    }
}

/// A transaction counted in [`Gate::transactions`] until dropped.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What an operation holds while it runs.
pub struct Pass(#[allow(dead_code)] Vec<Held>, #[allow(dead_code)] Option<Counted>);

/// Every group, in order.
pub const ALL_GROUPS: [Group; 4] = [Group::Catalog, Group::People, Group::Reviews, Group::Posts];

/// The gate of a history (see the module's head). `serial`: every
/// transaction runs alone, no other operation overlapping it (the old
/// default, kept as an option).
pub struct Gate {
    groups: Vec<GroupLock>,
    /// Transactions waiting for the gate or inside it.
    transactions: Arc<AtomicUsize>,
    serial: Arc<RwLock<()>>,
    serial_mode: bool,
}

impl Gate {
    pub fn new(serial: bool) -> Gate {
        let lock = || GroupLock {
            room: Arc::new(RwLock::new(())),
            entering: tokio::sync::Mutex::new(()),
            inside: Arc::new(Mutex::new((0, None))),
        };
        Gate {
            groups: (0..4).map(|_| lock()).collect(),
            transactions: Arc::new(AtomicUsize::new(0)),
            serial: Arc::new(RwLock::new(())),
            serial_mode: serial,
        }
    }

    /// How many transactions wait for the gate or are inside it.
    pub fn transactions(&self) -> usize {
        self.transactions.load(Ordering::SeqCst)
    }

    /// Waits until `op` may run; hold the pass while it does.
    pub async fn enter(&self, op: &Op) -> (Pass, Option<SerialGuard>) {
        self.enter_as(&entry(op)).await
    }

    /// Waits until an operation entering as `entry` (groups in order, each
    /// with its class) may run.
    pub async fn enter_as(&self, entry: &[(Group, Class)]) -> (Pass, Option<SerialGuard>) {
        let transaction = transactional(entry);
        // Counted before waiting: the sync worker stops for it (see the head).
        let counted = transaction.then(|| {
            self.transactions.fetch_add(1, Ordering::SeqCst);
            Counted(self.transactions.clone())
        });
        let serial = if !self.serial_mode {
            None
        } else if transaction {
            Some(SerialGuard::Alone(self.serial.clone().write_owned().await))
        } else {
            Some(SerialGuard::Shared(self.serial.clone().read_owned().await))
        };
        let mut held = Vec::new();
        for (g, class) in entry {
            let lock = &self.groups[*g as usize];
            held.push(match class {
                Class::Plain => Held::Plain(lock.room.clone().read_owned().await),
                Class::Both => Held::Alone(lock.room.clone().write_owned().await),
                Class::Transaction => {
                    // Only a transaction holding `entering` counts up, and
                    // the count only goes down from above 0: joining a
                    // class already in is atomic, opening it waits alone.
                    let _turn = lock.entering.lock().await;
                    let joined = lock.inside.lock().is_ok_and(|mut i| {
                        let join = i.0 > 0;
                        i.0 += usize::from(join);
                        join
                    });
                    if !joined {
                        let guard = lock.room.clone().write_owned().await;
                        if let Ok(mut i) = lock.inside.lock() {
                            *i = (1, Some(guard));
                        }
                    }
                    Held::Transaction(lock.inside.clone())
                }
            });
        }
        (Pass(held, counted), serial)
    }
}

/// The serial mode's hold: alone (a transaction) or shared (the rest).
pub enum SerialGuard {
    Alone(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
}
