//! The one error type of docrel: every variant says what went wrong and how
//! to fix it, and names the collection, document and field involved.

mod classify;
mod convert;
mod driver;
mod reason;

use driver::{explained, on_collection, transient_note};
pub(crate) use driver::{failure as driver_failure, Failure};
pub(crate) use reason::reason;

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The largest document MongoDB stores: 16 MiB.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// Everything that can go wrong in docrel.
///
/// ```
/// let err = docrel::Error::EmbedFull {
///     collection: "patrons",
///     id: "\"joe\"".into(),
///     field: "addresses",
///     max: 2,
///     len: 3,
/// };
/// assert!(err.to_string().contains("addresses"));
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No server answered at the URI.
    #[error(
        "cannot reach MongoDB at `{uri}`: {}. Check that a server runs there and that the URI names it \
         (host and port; `?directConnection=true` for a single server outside a replica set; credentials), \
         or set MONGODB_URI to a reachable deployment",
        reason(source)
    )]
    Connect {
        /// The URI that was tried (credentials removed).
        uri: String,
        /// What the driver said.
        #[source]
        source: Box<mongodb::error::Error>,
    },

    /// The URI given is not a MongoDB connection string.
    #[error("`{uri}` is not a MongoDB connection string: {reason}. It looks like `mongodb://127.0.0.1:27017`")]
    InvalidUri {
        /// The URI as given, credentials removed.
        uri: String,
        /// What is wrong with it: what the driver said, unless the driver
        /// quoted part of a password (it splits an unencoded one at its
        /// `?`, `/`, `:`, `@` or `#`); then which character to encode.
        reason: String,
    },

    /// The deployment is too old for a feature docrel was asked to use.
    #[error(
        "{feature} needs {needs} or later, and this deployment reports {server}. Upgrade the deployment, \
         or use what it supports (see the minimum versions in docrel's README)"
    )]
    Unsupported {
        /// The feature.
        feature: &'static str,
        /// The release it needs.
        needs: &'static str,
        /// What the deployment reported.
        server: String,
    },

    /// A value could not be converted to or from BSON: what `?` on one of
    /// the `bson` crate's errors gives.
    #[error("BSON: {message}")]
    Bson {
        /// What the bson crate said.
        message: String,
    },

    /// The server or the driver refused an operation.
    #[error("{operation}{} failed: {}{}", on_collection(collection), explained(source), transient_note(source))]
    Driver {
        /// Which operation (`insert`, `find`, ...).
        operation: &'static str,
        /// The collection it ran on.
        collection: String,
        /// What the driver said, whole: the message gives only the
        /// server's reason. Also `std::error::Error::source()` (a
        /// `Box<mongodb::error::Error>` to downcast to).
        #[source]
        source: Box<mongodb::error::Error>,
    },

    /// A stored document does not match the Rust type it was read into.
    #[error(
        "document {id} of collection `{collection}` cannot be read as `{rust_type}`: field `{path}`: \
         {message}. Fix the stored document or make the field an `Option`/give it `#[serde(default)]`"
    )]
    Decode {
        /// The collection read.
        collection: String,
        /// The `_id` of the document (as extended JSON), or `<no _id>`.
        id: String,
        /// The Rust type it was read into.
        rust_type: &'static str,
        /// The path of the field that failed (`parts[3].name`), or `.` for the document itself.
        path: String,
        /// What serde said.
        message: String,
    },

    /// A value could not be turned into BSON.
    #[error("cannot store {what} as BSON: {message}")]
    Encode {
        /// What was being encoded (a document, a filter value, ...).
        what: String,
        /// What serde said.
        message: String,
    },

    /// A document would pass MongoDB's 16 MiB limit.
    #[error(
        "document {id} of collection `{collection}` would be {bytes} bytes, above MongoDB's limit of \
         16 MiB ({max} bytes); nothing was written. Move its largest array into its own collection \
         (`#[reference(many)]` or `#[parent_ref]`) or bound it with `#[embed(max = N)]`"
    )]
    DocumentTooLarge {
        /// The collection.
        collection: &'static str,
        /// The `_id`, as extended JSON.
        id: String,
        /// Its encoded size.
        bytes: usize,
        /// The limit.
        max: usize,
    },

    /// A bounded array (an `#[embed]` or a `#[reference(many)]` with `max`)
    /// is full, or a write would make it pass its bound. The message names
    /// the bound, not the attribute: both kinds of array have one.
    #[error(
        "`{collection}.{field}` of document {id} holds at most {max} elements (its declared `max = {max}`) \
         and this write would make it {len}; nothing was written. Remove elements first, or raise the bound"
    )]
    EmbedFull {
        /// The collection.
        collection: &'static str,
        /// The `_id`, as extended JSON.
        id: String,
        /// The array field.
        field: &'static str,
        /// Its bound.
        max: u32,
        /// The length the write would have produced (at least).
        len: usize,
    },

    /// No document has this id.
    #[error("no document with _id {id} in collection `{collection}`")]
    NotFound {
        /// The collection.
        collection: &'static str,
        /// The `_id`, as extended JSON.
        id: String,
    },

    /// A delete was refused because other documents still refer to this one
    /// (`on_delete = restrict`).
    #[error(
        "document {id} of `{collection}` is still referred to by {count} document(s) of `{referrer}` \
         through `{field}` (`on_delete = restrict`); nothing was deleted. Remove those references first"
    )]
    StillReferenced {
        /// The collection of the document to delete.
        collection: &'static str,
        /// Its `_id`, as extended JSON.
        id: String,
        /// The referring collection.
        referrer: &'static str,
        /// The referring field.
        field: &'static str,
        /// How many documents refer to it.
        count: u64,
    },

    /// A source document was written, but rewriting its denormalized copies
    /// failed part of the way (for example the server went away).
    #[error(
        "document {id} of `{source_collection}` was written, but its copies in `{target}` (through `{path}`) could \
         not be rewritten: {cause}. Those copies are stale until fixed: run `docrel::check::copies::<T>().repair(&db)` for \
         `{source_collection}` (targets already rewritten: [{done}])"
    )]
    FanOut {
        /// The source collection.
        source_collection: &'static str,
        /// The source document's `_id`.
        id: String,
        /// The target collection that failed.
        target: &'static str,
        /// The path of the failed target.
        path: String,
        /// The targets rewritten before the failure.
        done: String,
        /// What went wrong.
        cause: Box<Error>,
    },

    /// A verify, repair or sync named a collection that no registered type
    /// copies from.
    #[error(
        "no denormalized copies come from collection `{collection}`, so there is nothing to verify or repair; the \
         sources of copies in this program are: [{known}]. Check the name, and that the types holding the copies \
         are linked into this binary"
    )]
    UnknownSource {
        /// The collection named.
        collection: String,
        /// The collections that are sources of copies.
        known: String,
    },

    /// A subset could not be rebuilt because other changes of the same
    /// parent kept landing between its read and its write.
    #[error(
        "the subset `{parent}.{field}` of document {id} could not be rebuilt after {attempts} attempts: other \
         changes of its children kept coming in between. The children are written; run \
         `rels().{field}.rebuild(..)` for this parent when the writes calm down"
    )]
    SubsetContended {
        /// The parent collection.
        parent: &'static str,
        /// The parent's `_id`, as extended JSON.
        id: String,
        /// The subset array.
        field: &'static str,
        /// How many rebuilds were tried.
        attempts: u32,
    },

    /// A transaction kept meeting concurrent writes of the same documents
    /// and was retried until the driver's time budget (120 s) ran out;
    /// nothing of it was committed.
    #[error(
        "{operation} in `{namespace}` was retried for 120 s and kept conflicting with concurrent writes of the same \
         documents; nothing of it was written. Retry it later, or spread the writes over fewer hot documents"
    )]
    TransactionContended {
        /// The operation.
        operation: &'static str,
        /// The database or collection.
        namespace: String,
    },

    /// A transaction's commit kept failing with an unknown outcome (the
    /// server unreachable, or its answer lost) until the driver's time
    /// budget (120 s) ran out: it may have committed.
    #[error(
        "the commit of {operation} in `{namespace}` kept failing for 120 s with an unknown outcome ({message}): it \
         may have been written in full, or not at all (a transaction is never half written). Read the documents to \
         see which before running it again: run again after a commit that landed, a write that is not idempotent \
         (a push, an increment) is applied twice"
    )]
    CommitUnknown {
        /// The operation.
        operation: &'static str,
        /// The database or collection.
        namespace: String,
        /// The last commit error's words.
        message: String,
    },

    /// An update tried to write one side of a two-way reference, which
    /// would leave the other side disagreeing.
    #[error(
        "`{collection}.{field}` is one side of a two-way reference (its other side is `{inverse}`): an update of it \
         would leave the other side behind, so nothing was written. Change it with the relation handle, which \
         writes both sides in one call: `rels().{rust_field}.reassign(..)` for a single reference, \
         `rels().{rust_field}.link(..)` / `.unlink(..)` for an array (where only the schema another program \
         published declares the reference, declare it on this type too)"
    )]
    TwoWayField {
        /// The collection.
        collection: &'static str,
        /// The stored name of the field.
        field: &'static str,
        /// The stored name of the field on the other side.
        inverse: &'static str,
        /// The Rust name of the field (for the handle).
        rust_field: &'static str,
    },

    /// A filter, update or sort built from typed handles is malformed.
    #[error("invalid {what}: {message}")]
    Invalid {
        /// What was invalid.
        what: Misuse,
        /// Why, and how to fix it.
        message: String,
    },

    /// A sync worker cannot resume its change stream: the point it stopped
    /// at is no longer in the oplog (server code 286, ChangeStreamHistoryLost)
    /// or the stream failed for good (280, ChangeStreamFatalError). Writes
    /// made in the gap never reached their copies or subsets, and nothing
    /// will replay them.
    #[error(
        "sync worker `{worker}` cannot resume its change stream on database `{database}`: {}. Changes made \
         while it was behind may never have reached their denormalized copies and subsets: run \
         `docrel::check::copies::<T>().repair(&db)` for each of [{sources}] (or `repair` in the admin CLI), then start the worker \
         again; or start it with `.on_history_lost(HistoryLost::RepairAndContinue)` to do both",
        reason(source)
    )]
    SyncHistoryLost {
        /// The worker's name (its entry in `_docrel_sync`).
        worker: String,
        /// The database it follows.
        database: String,
        /// The collections whose derived data may be stale.
        sources: String,
        /// What the server said.
        #[source]
        source: Box<mongodb::error::Error>,
    },

    /// A delete removed its documents, then their `on_delete` rules
    /// stopped part way. The delete stands (nothing undoes it, and running
    /// it again finds nothing to delete); the rules' remaining writes were
    /// not made.
    #[error(
        "{deleted} document(s) of `{collection}` were deleted, then their `on_delete` rules stopped: {cause}. The \
         delete stands and running it again finds nothing to delete; what the rules had not reached yet (references \
         to the deleted documents, their children) is as it was: `verify` and `doctor` name it"
    )]
    RulesUnfinished {
        /// The collection deleted from.
        collection: &'static str,
        /// How many documents the delete removed.
        deleted: u64,
        /// Why the rules stopped.
        cause: Box<Error>,
    },

    /// An upsert matched nothing and inserted its document, then what the
    /// new document owes (its copies, its summary in its parents' subsets,
    /// the other side of its two-way references) stopped. The document
    /// stays stored.
    #[error(
        "an upsert into `{collection}` matched nothing and inserted document {id}; then what the new document owes \
         stopped: {cause}. The inserted document stays stored (what that step wrote is as its own words say); \
         `verify` names what is left, and `repair` rewrites copies and subsets"
    )]
    InsertUnfinished {
        /// The collection inserted into.
        collection: &'static str,
        /// The inserted document's `_id`.
        id: String,
        /// Why what it owes stopped.
        cause: Box<Error>,
    },

    /// This process could not confirm the schema published in the
    /// database within its lease, so it refuses docrel writes there rather
    /// than write without a rule another program may have added (a copy, a
    /// subset, a delete rule). Nothing was written.
    #[error(
        "docrel refuses to write to database `{database}`: this process last confirmed the schema published \
         in `_docrel_schema` {since} ago, beyond its lease of {lease:?}, and confirming it again failed: \
         {reason}. Nothing was written. A write now could skip a rule another program published; fix what \
         stops the schema from being read (the server's reachability, or a schema of a newer docrel: upgrade \
         this program), then write again (`docrel::schema::set_lease` sets the lease)"
    )]
    SchemaLease {
        /// The database whose schema could not be confirmed.
        database: String,
        /// How long ago it was last confirmed ("never" if it never was).
        since: String,
        /// The lease this process holds the schema under.
        lease: std::time::Duration,
        /// Why confirming it failed.
        reason: String,
        /// Whether that failure may pass (the server unreachable or
        /// electing a primary): the write may succeed when run again.
        transient: bool,
    },

    /// The rules published in the database changed while a caller's
    /// transaction ran past the lease its docrel writes followed them
    /// under: [`crate::repository::commit`] aborted it rather than commit
    /// writes made under the old rules (a rule change backfills only what
    /// was committed before it began). Nothing was written; running it
    /// again follows the new rules.
    #[error(
        "the rules published in `_docrel_schema` of database `{database}` changed while this transaction ran, \
         past the lease of {lease:?} its writes followed them under: docrel aborted it rather than commit writes \
         made under the old rules, so nothing was written. Run it again: it follows the new rules"
    )]
    RulesChanged {
        /// The database whose rules changed.
        database: String,
        /// The lease the transaction's writes followed the rules under.
        lease: std::time::Duration,
    },
}

/// What an [`Error::Invalid`] is about, to match on.
///
/// ```
/// let err = docrel::Error::Invalid { what: docrel::Misuse::Filter, message: "…".into() };
/// assert!(matches!(err, docrel::Error::Invalid { what: docrel::Misuse::Filter, .. }));
/// assert!(err.to_string().starts_with("invalid filter"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Misuse {
    /// a bucket's declaration or its parent.
    Bucket,
    /// an element appended to a bucket.
    BucketElement,
    /// a time range read from buckets.
    BucketRange,
    /// a summary written into a subset.
    SubsetElement,
    /// a subset's declaration.
    Subset,
    /// a collection name given at run time (admin, verify).
    Collection,
    /// a database name given to the admin tool.
    Database,
    /// a severity given to the doctor.
    Severity,
    /// a file the admin tool reads or writes.
    File,
    /// a document to insert.
    Insert,
    /// a document to replace.
    Replace,
    /// a transactional fan-out on a deployment without transactions.
    TransactionalFanOut,
    /// `latest_per_parent` without an order.
    LatestPerParent,
    /// the `on_delete` rules (a cascade cycle).
    OnDelete,
    /// a two-way link.
    Link,
    /// a two-way unlink.
    Unlink,
    /// the inverse side of a two-way reference.
    Inverse,
    /// the environment (`MONGODB_URI`).
    Environment,
    /// a filter.
    Filter,
    /// the schema published in the database.
    Schema,
    /// an update.
    Update,
    /// a single-document write on a sharded collection whose filter lacks
    /// the shard key.
    ShardKey,
    /// the denormalized copies of the schema (a copy copied back into itself).
    Copy,
    /// a count, limit, skip or page number above `i64::MAX`, the largest
    /// MongoDB takes.
    Count,
    /// an index declared on a document type (its partial filter).
    Index,
    /// the `$jsonSchema` validator of a collection (documents breaking it).
    Validator,
    /// a document without an `_id` (an `Option` id still `None`) given to
    /// a write that names a stored document by it.
    Id,
    /// a write of a shape a move between patterns keeps, that the other
    /// shape cannot hold (a second document where the old shape holds one).
    MovedWrite,
    /// An error of the application built on docrel (its own validation),
    /// carried in docrel's error type.
    Application(&'static str),
}

impl std::fmt::Display for Misuse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Misuse::Bucket => "bucket",
            Misuse::BucketElement => "bucket element",
            Misuse::BucketRange => "bucket range",
            Misuse::SubsetElement => "subset element",
            Misuse::Subset => "subset",
            Misuse::Collection => "collection",
            Misuse::Database => "database",
            Misuse::Severity => "severity",
            Misuse::File => "file",
            Misuse::Insert => "insert",
            Misuse::Replace => "replace",
            Misuse::TransactionalFanOut => "transactional fan-out",
            Misuse::LatestPerParent => "latest_per_parent",
            Misuse::OnDelete => "on_delete",
            Misuse::Link => "link",
            Misuse::Unlink => "unlink",
            Misuse::Inverse => "inverse",
            Misuse::Environment => "environment",
            Misuse::Filter => "filter",
            Misuse::Schema => "schema",
            Misuse::Update => "update",
            Misuse::ShardKey => "shard key",
            Misuse::Copy => "copy",
            Misuse::Count => "count",
            Misuse::Index => "index",
            Misuse::Validator => "validator",
            Misuse::Id => "id",
            Misuse::MovedWrite => "write during a move",
            Misuse::Application(what) => what,
        })
    }
}

/// The kind and the message: what `main` and `unwrap` print. The derived
/// form would dump the driver's raw BSON replies as hex.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {self}", self.kind())
    }
}

/// Renders a BSON value as relaxed extended JSON, for error messages.
pub(crate) fn show_id(id: &mongodb::bson::Bson) -> String {
    ShowId::show_id(id)
}

/// A BSON value shown in error messages: implemented in `id.rs` for the
/// driver's `Bson` through `bson_compat`, which names whichever bson major
/// version the driver has, and which this layer does not use.
pub(crate) trait ShowId {
    /// The value as relaxed extended JSON.
    fn show_id(&self) -> String;
}
