//! The caller's session, threaded through every capability: each driver
//! call of a docrel write runs in it when there is one, so the side effects
//! of a write (fan-out, fill, subsets, inverse sides, `on_delete`) join the
//! caller's transaction. A write's steps take one [`Cx`] (the database and
//! the optional session) and pass it on.

use crate::error::{Error, Result};
use mongodb::bson::{self, RawDocument};
use mongodb::{ClientSession, Database};

/// Where a docrel call runs: its database, and the caller's session when
/// there is one. Every step of a write takes `&mut Cx` and hands it on, so
/// the session can be neither dropped nor used twice at once.
pub(crate) struct Cx<'a> {
    pub(crate) db: &'a Database,
    /// The schema graph of `db` when the call began: every step of one
    /// call follows the same rules, even when a re-read of the stored
    /// schema installs new ones meanwhile.
    pub(crate) graph: &'static crate::schema::graph::Graph,
    session: Option<&'a mut ClientSession>,
}

impl<'a> Cx<'a> {
    pub(crate) fn new(db: &'a Database, session: Option<&'a mut ClientSession>) -> Self {
        Cx { db, graph: crate::schema::graph::of(db), session }
    }

    /// The session, for one driver call (`in_session!(action, cx.session())`).
    pub(crate) fn session(&mut self) -> Option<&mut ClientSession> {
        self.session.as_deref_mut()
    }

    /// Whether the caller gave a session: a write that would open a
    /// transaction of its own then tries it in the caller's.
    pub(crate) fn has_session(&self) -> bool {
        self.session.is_some()
    }

    /// The database's write concern, for a command that does not inherit
    /// it (a client-level `bulkWrite`, a command run as such), when the
    /// command may carry one: outside a session, or in a caller's session
    /// that is not in a transaction (inside one, the server refuses a
    /// write concern on a statement; the commit carries the transaction's).
    pub(crate) async fn write_concern(&mut self) -> Option<mongodb::options::WriteConcern> {
        let wc = self.db.write_concern()?.clone();
        if let Some(s) = self.session.as_deref_mut() {
            if in_transaction(s).await {
                return None;
            }
        }
        Some(wc)
    }
}

/// Runs a driver action, in `session` when given:
/// `in_session!(coll.update_one(f, u), session.as_deref_mut())`.
/// Whether the caller's session is in a transaction. The driver keeps that
/// to itself, so it is asked to start one: it refuses while one is in
/// progress, and one it does start is only local state (no command is sent
/// until the first operation), dropped again at once.
pub(crate) async fn in_transaction(session: &mut ClientSession) -> bool {
    match session.start_transaction().await {
        Ok(()) => {
            let _ = session.abort_transaction().await;
            false
        }
        Err(e) => {
            matches!(&*e.kind, mongodb::error::ErrorKind::Transaction { message, .. } if message.contains("in progress"))
        }
    }
}

macro_rules! in_session {
    ($action:expr, $session:expr) => {
        match $session {
            Some(s) => $action.session(s).await,
            None => $action.await,
        }
    };
}
pub(crate) use in_session;

/// Opens a cursor from a driver action (a find or an aggregate), in
/// `session` when given, and reads every result through `each`.
macro_rules! drain {
    ($action:expr, $session:expr, $err:expr, $each:expr) => {{
        let mut out = Vec::new();
        match $session {
            Some(s) => {
                let mut cursor = $action.session(&mut *s).await.map_err($err)?;
                while cursor.advance(s).await.map_err($err)? {
                    out.push($each(cursor.current())?);
                }
            }
            None => {
                let mut cursor = $action.await.map_err($err)?;
                while cursor.advance().await.map_err($err)? {
                    out.push($each(cursor.current())?);
                }
            }
        }
        Ok(out)
    }};
}

/// Runs a find, in `session` when given, and reads every result through
/// `each`. Driver errors are named `find` on `collection`.
pub(crate) async fn collect<T: Send + Sync, U>(
    find: mongodb::action::Find<'_, T>,
    session: Option<&mut ClientSession>,
    collection: &str,
    mut each: impl FnMut(&RawDocument) -> Result<U>,
) -> Result<Vec<U>> {
    let err = |e| Error::driver("find", collection.to_owned(), e);
    drain!(find, session, err, each)
}

/// Runs an aggregate of raw documents, in `session` when given, and reads
/// every result through `each`. Driver errors are named `aggregate` on `collection`.
pub(crate) async fn collect_aggregate<U>(
    aggregate: mongodb::action::Aggregate<'_, mongodb::action::ImplicitSession, bson::RawDocumentBuf>,
    session: Option<&mut ClientSession>,
    collection: &str,
    mut each: impl FnMut(&RawDocument) -> Result<U>,
) -> Result<Vec<U>> {
    let err = |e| Error::driver("aggregate", collection.to_owned(), e);
    drain!(aggregate, session, err, each)
}

/// A stored document as a BSON document (for the bookkeeping that edits it).
pub(crate) fn plain(collection: &str, raw: &RawDocument) -> Result<bson::Document> {
    bson::Document::try_from(raw)
        .map_err(|e| Error::Encode { what: format!("a document of `{collection}`"), message: e.to_string() })
}

/// Reads that decide a write go to the primary, whatever the client's read
/// preference: a secondary may be behind, and a guard checked against old
/// data lets a stale write through.
pub(crate) fn primary() -> mongodb::options::SelectionCriteria {
    mongodb::options::SelectionCriteria::ReadPreference(mongodb::options::ReadPreference::Primary)
}
