//! The concrete operations of a history, with their arguments. Indices
//! name ids of the history's universe (`P3` is part 3, see [`Arg`]);
//! strings and dates are unique per operation, so a stored value tells
//! which operation wrote it.

use super::kinds::OpKind;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which source collection a repair or verify scans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Source {
    Part,
    Product,
    Person,
}

/// A fail point: the next `times` commands named in `commands` from this
/// history's client fail, by a cut connection or an error code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    pub commands: Vec<String>,
    pub times: u32,
    /// `None`: `closeConnection: true`; `Some(code)`: `errorCode: code`.
    pub error_code: Option<i32>,
    /// Instead: the write is applied and answered with a write-concern
    /// error (code 64), an outcome docrel cannot tell from a failed one.
    #[serde(default)]
    pub write_concern: bool,
}

/// The commands a fail point may hit.
pub const FAULT_COMMANDS: &[&str] = &[
    "insert",
    "update",
    "delete",
    "findAndModify",
    "find",
    "aggregate",
    "getMore",
    "count",
    "distinct",
    "commitTransaction",
    "bulkWrite",
];
/// The commands a write-concern fault may hit: the writes.
pub const WRITE_COMMANDS: &[&str] = &["insert", "update", "delete", "findAndModify", "bulkWrite", "commitTransaction"];
/// The error codes a fail point may return: BadValue (not retryable),
/// ShutdownInProgress (retryable), WriteConflict (transient in a transaction).
pub const FAULT_CODES: &[i32] = &[2, 91, 112];

/// What docrel may send for an operation in the group it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sends {
    /// Statements of a multi-document transaction.
    pub transaction: bool,
    /// Plain multi-document writes (`updateMany`, `deleteMany`).
    pub plain: bool,
}

/// How a user session ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum End {
    /// In a transaction, committed.
    Commit,
    /// In a transaction, aborted: nothing of it may remain.
    Abort,
    /// No transaction: each call in the session stands on its own.
    NoTxn,
}

/// How an argument is shown, and whether it asks for a transaction.
pub trait Arg {
    /// The argument named `field`, compactly.
    fn show(&self, field: &str) -> String;
    /// Whether it is a `txn` flag that is set.
    fn txn(&self, _field: &str) -> bool {
        false
    }
}

/// `P3` part 3, `R1` product 1, `H2` person 2, `T4` task 4, `I1` item 1,
/// `V7` review 7 (rid 107), `B1` post 1.
fn named(field: &str, n: usize) -> String {
    match field {
        "p" | "ps" | "parts" => format!("P{n}"),
        "r" | "rs" | "product" => format!("R{n}"),
        "h" | "by" => format!("H{n}"),
        "t" | "tasks" => format!("T{n}"),
        "i" => format!("I{}", n + 1),
        "v" | "vs" => format!("V{n}"),
        "b" => format!("B{}", n + 1),
        _ => n.to_string(),
    }
}

impl Arg for usize {
    fn show(&self, field: &str) -> String {
        named(field, *self)
    }
}

impl Arg for Vec<usize> {
    fn show(&self, field: &str) -> String {
        let names: Vec<String> = self.iter().map(|n| named(field, *n)).collect();
        format!("[{}]", names.join(" "))
    }
}

impl Arg for String {
    fn show(&self, _: &str) -> String {
        format!("{self:?}")
    }
}

impl Arg for i32 {
    fn show(&self, field: &str) -> String {
        format!("{field} {self}")
    }
}

impl Arg for i64 {
    fn show(&self, _: &str) -> String {
        minutes(*self)
    }
}

impl Arg for bool {
    fn show(&self, field: &str) -> String {
        if *self {
            field.to_owned()
        } else {
            String::new()
        }
    }
    fn txn(&self, field: &str) -> bool {
        field == "txn" && *self
    }
}

impl Arg for Vec<(usize, String, usize)> {
    fn show(&self, _: &str) -> String {
        let ps: Vec<String> = self.iter().map(|(p, n, r)| format!("P{p} {n:?} R{r}")).collect();
        format!("[{}]", ps.join(", "))
    }
}

/// Tasks and the writers of their notes: `[T1 by [H0 H3], ..]`.
impl Arg for Vec<(usize, Vec<usize>)> {
    fn show(&self, _: &str) -> String {
        let ts: Vec<String> = self.iter().map(|(t, by)| format!("T{t} by {}", by.show("by"))).collect();
        format!("[{}]", ts.join(", "))
    }
}

/// Comments of posts: `[B1 "c-w0.3.0", ..]`.
impl Arg for Vec<(usize, String)> {
    fn show(&self, _: &str) -> String {
        let cs: Vec<String> = self.iter().map(|(b, t)| format!("B{b} {t:?}")).collect();
        format!("[{}]", cs.join(", "))
    }
}

impl Arg for Vec<(usize, usize, String, i64)> {
    fn show(&self, _: &str) -> String {
        let rs: Vec<String> =
            self.iter().map(|(v, i, t, d)| format!("V{v} on I{} {t:?} {}", i + 1, minutes(*d))).collect();
        format!("[{}]", rs.join(", "))
    }
}

impl Arg for Source {
    fn show(&self, _: &str) -> String {
        format!("{self:?}")
    }
}

impl Arg for End {
    fn show(&self, _: &str) -> String {
        format!("{self:?}")
    }
}

impl Arg for Fault {
    fn show(&self, _: &str) -> String {
        let how = match self.error_code {
            _ if self.write_concern => "writeConcernError".to_owned(),
            None => "closeConnection".to_owned(),
            Some(c) => format!("errorCode {c}"),
        };
        format!("{} x{}, {how}", self.commands.join("/"), self.times)
    }
}

impl Arg for Vec<Op> {
    fn show(&self, _: &str) -> String {
        let steps: Vec<String> = self.iter().map(ToString::to_string).collect();
        format!("[{}]", steps.join("; "))
    }
}

/// Declares [`Op`], one variant per [`OpKind`] of the same name, with its
/// kind, its transaction flag and its display.
macro_rules! ops {
    ($($kind:ident { $($field:ident: $ty:ty),* $(,)? },)*) => {
        /// One operation with its arguments.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        pub enum Op { $($kind { $($field: $ty),* }),* }

        impl Op {
            /// The kind of this operation.
            pub fn kind(&self) -> OpKind {
                match self { $(Op::$kind { .. } => OpKind::$kind),* }
            }

            /// Whether one of its arguments is a set `txn` flag.
            fn txn_flag(&self) -> bool {
                match self { $(Op::$kind { $($field),* } => false $(|| Arg::txn($field, stringify!($field)))*),* }
            }

            /// Its arguments, shown.
            fn args(&self) -> Vec<String> {
                match self { $(Op::$kind { $($field),* } => vec![$(Arg::show($field, stringify!($field))),*]),* }
            }
        }
    };
}

ops! {
    RenamePart { p: usize, name: String, txn: bool },
    RenamePartWhere { r: usize, name: String, txn: bool },
    RenamePartsMany { ps: Vec<usize>, name: String, txn: bool },
    ReplacePart { p: usize, name: String, product: usize, txn: bool },
    SavePart { p: usize, name: String, product: usize, txn: bool },
    InsertPart { p: usize, name: String, product: usize },
    InsertManyParts { parts: Vec<(usize, String, usize)> },
    UpsertPart { p: usize, name: String, product: usize, txn: bool },
    InsertPartReturning { p: usize, name: String, product: usize },
    MovePart { p: usize, product: usize, txn: bool },
    MovePartsMany { ps: Vec<usize>, product: usize, txn: bool },
    IncPartQty { p: usize, by: i32, txn: bool },
    BoundPartQty { p: usize, qty: i32, max: bool },
    LabelPart { p: usize, label: String },
    UnlabelPart { p: usize },
    RawUpdatePart { p: usize, label: String, by: i32 },
    RawRenamePart { r: usize },
    SetPartCopy { p: usize, name: String },
    PullOneTaskNote { text: String },
    DeletePart { p: usize },
    DeletePartWhere { r: usize },
    DeleteManyParts { ps: Vec<usize> },
    RenameProduct { r: usize, name: String, txn: bool },
    RenameProductsMany { rs: Vec<usize>, name: String, txn: bool },
    ReplaceProduct { r: usize, name: String, parts: Vec<usize>, txn: bool },
    SaveProduct { r: usize, name: String, parts: Vec<usize>, txn: bool },
    InsertProduct { r: usize, name: String, parts: Vec<usize> },
    PushPartRef { r: usize, p: usize, txn: bool },
    AddPartRef { r: usize, p: usize },
    PullPartRef { r: usize, p: usize },
    PullAllPartRefs { r: usize, p: usize },
    PullWherePartRef { r: usize, p: usize },
    SetPartRefs { r: usize, parts: Vec<usize> },
    DeleteProduct { r: usize },
    InsertPerson { h: usize, name: String },
    InsertPersonWithTasks { h: usize, name: String, tasks: Vec<usize> },
    RenamePerson { h: usize, name: String, txn: bool },
    ReplacePerson { h: usize, name: String },
    SavePerson { h: usize, name: String },
    DeletePerson { h: usize },
    DeletePersonWithTasks { h: usize },
    InsertTask { t: usize, description: String },
    InsertTaskOwned { t: usize, h: usize, description: String },
    InsertTaskOwnedEarly { t: usize, h: usize, description: String },
    ReplaceTask { t: usize, description: String },
    SaveTask { t: usize, description: String },
    InsertTaskNoted { t: usize, by: Vec<usize>, text: String },
    InsertManyTasks { tasks: Vec<(usize, Vec<usize>)>, text: String },
    PushTaskNote { t: usize, h: usize, text: String, txn: bool },
    SetTaskNotes { t: usize, by: Vec<usize>, text: String },
    PullTaskNotes { t: usize, h: usize },
    DeleteTask { t: usize },
    DeleteTaskDoc { t: usize },
    Reassign { t: usize, h: usize },
    LinkTask { h: usize, t: usize },
    UnlinkTask { h: usize, t: usize },
    UnlinkOwner { t: usize, h: usize },
    SetOwnerPlainly { t: usize, h: usize },
    InsertItem { i: usize, name: String },
    ReplaceItem { i: usize, name: String },
    SaveItem { i: usize, name: String },
    DeleteItem { i: usize },
    PullSummary { i: usize, v: usize },
    InsertReview { v: usize, i: usize, text: String, date: i64 },
    InsertManyReviews { reviews: Vec<(usize, usize, String, i64)> },
    EditReviewText { v: usize, text: String, txn: bool },
    EditReviewWhere { i: usize, text: String },
    EditReviewsMany { vs: Vec<usize>, text: String, txn: bool },
    EditReviewDate { v: usize, date: i64 },
    ReviewNow { v: usize },
    MoveReview { v: usize, i: usize },
    MoveReviewsMany { vs: Vec<usize>, i: usize, txn: bool },
    ReplaceReview { v: usize, i: usize, text: String, date: i64 },
    SaveReview { v: usize, i: usize, text: String, date: i64 },
    DeleteReview { v: usize },
    DeleteReviewWhere { i: usize },
    DeleteReviewDoc { v: usize },
    DeleteManyReviews { vs: Vec<usize> },
    RebuildSubset { i: usize },
    InsertPost { b: usize },
    DeletePost { b: usize },
    AppendComment { b: usize, text: String },
    AppendComments { comments: Vec<(usize, String)> },
    BumpPageCount { b: usize },
    Session { steps: Vec<Op>, end: End },
    Repair { source: Source },
    Verify { source: Source },
    FaultOn { fault: Fault },
    FaultOff {},
}

impl Op {
    /// Whether docrel may run this operation in a multi-document
    /// transaction; the group-by-group answer, with the plain writes, is
    /// [`Op::sends`] (`gate::entry`).
    pub fn runs_transaction(&self) -> bool {
        match self {
            Op::Session { steps, end } => *end != End::NoTxn || steps.iter().any(Op::runs_transaction),
            _ => self.sends().transaction,
        }
    }

    /// What docrel may send for this operation (not a session) in the
    /// group it writes, as docrel decides it (`monitor.rs` checks it on
    /// every operation):
    ///
    /// - a transaction: two-way writes; a `transactional_fan_out()` write
    ///   of a copied field (not one of references alone, `MovePart`,
    ///   `PushPartRef`: those are plain writes whatever the repository);
    ///   an insert of several documents, or of a type with two-way
    ///   references (a save or upsert that inserts one too);
    /// - a plain multi-document write besides: the two-way writes refresh
    ///   the copies through the new reference after their transaction;
    ///   an insert's commit is followed by the holders' fill and the links
    ///   back (each a transaction of its own); an upsert or a save that
    ///   inserts owes what an insert owes, outside any transaction; a
    ///   replace of a holder confirms its copies after its transaction;
    /// - everything else is plain: a write and its inline fan-out.
    pub fn sends(&self) -> Sends {
        use Op as O;
        let (transaction, plain) = match self {
            O::Reassign { .. } | O::LinkTask { .. } | O::UnlinkTask { .. } | O::UnlinkOwner { .. } => (true, true),
            O::InsertPerson { .. }
            | O::InsertPersonWithTasks { .. }
            | O::InsertTask { .. }
            | O::InsertTaskOwned { .. }
            | O::InsertTaskOwnedEarly { .. }
            | O::SavePerson { .. }
            | O::SaveTask { .. }
            | O::InsertTaskNoted { .. }
            | O::InsertManyTasks { .. }
            | O::InsertManyParts { .. }
            | O::PullOneTaskNote { .. } => (true, true),
            // Reviews hold no copies and have no two-way reference: the
            // commit owes nothing but the subsets' pushes, in the transaction.
            O::InsertManyReviews { .. } => (true, false),
            // A write of references alone runs plain, whatever the repository.
            O::MovePart { .. } | O::MovePartsMany { .. } | O::PushPartRef { .. } => (false, true),
            // So does a write of the notes' references, and the deletes
            // whose pulls reach them.
            O::PushTaskNote { .. } | O::SetTaskNotes { .. } | O::PullTaskNotes { .. } => (false, true),
            O::DeletePersonWithTasks { .. } => (false, true),
            // One that inserts owes what an insert owes, outside the
            // transaction; a replace confirms the copies it filled against
            // their sources after it, rewriting them (plainly) when one
            // moved on meanwhile.
            O::UpsertPart { txn, .. }
            | O::SavePart { txn, .. }
            | O::SaveProduct { txn, .. }
            | O::ReplacePart { txn, .. }
            | O::ReplaceProduct { txn, .. } => (*txn, true),
            _ if self.txn_flag() => (true, false),
            _ => (false, true),
        };
        Sends { transaction, plain }
    }
    /// Whether this is fault injection rather than a docrel call.
    pub fn is_fault(&self) -> bool {
        matches!(self, Op::FaultOn { .. } | Op::FaultOff {})
    }

    /// The operations it runs: its steps for a session, itself otherwise.
    pub fn steps(&self) -> Vec<&Op> {
        match self {
            Op::Session { steps, .. } => steps.iter().collect(),
            _ => vec![self],
        }
    }
}

/// `Kind(arg, arg, ..)`, ids by name, flags only when set.
impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let args: Vec<String> = self.args().into_iter().filter(|a| !a.is_empty()).collect();
        if args.is_empty() {
            write!(f, "{:?}", self.kind())
        } else {
            write!(f, "{:?}({})", self.kind(), args.join(", "))
        }
    }
}

/// The base of review dates: 2019-02-16T00:00:00Z.
pub const BASE_DATE_MS: i64 = 1_550_275_200_000;

/// A date, shown as `d+<minutes>.<unique part>` after the base date.
pub fn minutes(ms: i64) -> String {
    let off = ms - BASE_DATE_MS;
    format!("d{:+}.{}", off.div_euclid(1_000_000), off.rem_euclid(1_000_000))
}
