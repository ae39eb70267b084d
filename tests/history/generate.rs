//! Making one operation of a kind, with random arguments drawn from the
//! history's universe (see `plan.rs`).

use super::plan::*;
use super::schema::{NOTES_MAX, PARTS_MAX};
use super::setup::SETUP_PEOPLE;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The kinds a user session may run as its steps (every other kind has no
/// session to give, or is not a docrel call).
pub const SESSION_KINDS: &[OpKind] = &[
    OpKind::RenamePart,
    OpKind::RenamePartWhere,
    OpKind::RenamePartsMany,
    OpKind::ReplacePart,
    OpKind::SavePart,
    OpKind::InsertPart,
    OpKind::UpsertPart,
    OpKind::MovePart,
    OpKind::MovePartsMany,
    OpKind::IncPartQty,
    OpKind::LabelPart,
    OpKind::UnlabelPart,
    OpKind::DeletePart,
    OpKind::DeletePartWhere,
    OpKind::RenameProduct,
    OpKind::ReplaceProduct,
    OpKind::PushPartRef,
    OpKind::PullPartRef,
    OpKind::DeleteProduct,
    OpKind::InsertPerson,
    OpKind::RenamePerson,
    OpKind::SavePerson,
    OpKind::DeletePerson,
    OpKind::DeletePersonWithTasks,
    OpKind::InsertTask,
    OpKind::InsertTaskOwned,
    OpKind::ReplaceTask,
    OpKind::InsertTaskNoted,
    OpKind::PushTaskNote,
    OpKind::SetTaskNotes,
    OpKind::DeleteTask,
    OpKind::DeleteTaskDoc,
    OpKind::Reassign,
    OpKind::LinkTask,
    OpKind::UnlinkTask,
    OpKind::UnlinkOwner,
    OpKind::InsertItem,
    OpKind::DeleteItem,
    OpKind::InsertReview,
    OpKind::EditReviewText,
    OpKind::EditReviewDate,
    OpKind::MoveReview,
    OpKind::MoveReviewsMany,
    OpKind::SaveReview,
    OpKind::DeleteReview,
    OpKind::DeleteReviewWhere,
];

/// What the making of one operation needs.
struct Gen<'r> {
    rng: &'r mut ChaCha8Rng,
    w: usize,
    i: usize,
    /// Which date of the operation comes next (see [`unique_date`]).
    k: usize,
    tag: String,
    txn: bool,
}

impl Gen<'_> {
    fn below(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n)
    }
    fn part(&mut self) -> usize {
        self.below(PARTS)
    }
    fn product(&mut self) -> usize {
        self.below(PRODUCTS)
    }
    fn person(&mut self) -> usize {
        self.below(PEOPLE)
    }
    fn task(&mut self) -> usize {
        self.below(TASKS)
    }
    fn item(&mut self) -> usize {
        self.below(ITEMS)
    }
    fn review(&mut self) -> usize {
        self.below(REVIEWS)
    }
    fn post(&mut self) -> usize {
        self.below(POSTS)
    }
    fn name(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.tag)
    }
    fn date(&mut self) -> i64 {
        self.k += 1;
        unique_date(self.rng, self.w, self.i, self.k - 1)
    }
    fn some(&mut self, n: usize, min: usize, max: usize) -> Vec<usize> {
        let len = self.rng.random_range(min..=max);
        (0..len).map(|_| self.below(n)).collect()
    }
    /// A parts list: sometimes over the bound (the write must be refused).
    fn parts_list(&mut self) -> Vec<usize> {
        let max = if self.rng.random_bool(0.15) { PARTS_MAX + 2 } else { PARTS_MAX };
        self.some(PARTS, 0, max)
    }
    /// The writers of a task's notes: sometimes over the bound (the write
    /// must be refused).
    fn note_writers(&mut self) -> Vec<usize> {
        let max = if self.rng.random_bool(0.15) { NOTES_MAX + 1 } else { NOTES_MAX };
        self.some(PEOPLE, 0, max)
    }
}

fn pick_kind(rng: &mut ChaCha8Rng, kinds: &[OpKind]) -> Option<OpKind> {
    let total: u32 = kinds.iter().map(|k| k.weight()).sum();
    if total == 0 {
        return None;
    }
    let mut x = rng.random_range(0..total);
    for k in kinds {
        if x < k.weight() {
            return Some(*k);
        }
        x -= k.weight();
    }
    None
}

/// One operation of worker `w`, its `i`-th, of a kind among `kinds`.
pub fn one(rng: &mut ChaCha8Rng, kinds: &[OpKind], mode: Mode, w: usize, i: usize) -> Op {
    let Some(kind) = pick_kind(rng, kinds) else { return Op::Verify { source: Source::Part } };
    let txn = mode == Mode::Inline && rng.random_bool(0.3);
    let mut g = Gen { rng, w, i, k: 0, tag: format!("w{w}.{i}"), txn };
    if kind == OpKind::Session {
        return session(&mut g, kinds);
    }
    of_kind(&mut g, kind)
}

fn of_kind(g: &mut Gen<'_>, kind: OpKind) -> Op {
    parts(g, kind)
        .or_else(|| products(g, kind))
        .or_else(|| people(g, kind))
        .or_else(|| reviews(g, kind))
        .or_else(|| others(g, kind))
        .unwrap_or(Op::Verify { source: Source::Part })
}

/// 2 to 4 steps of the session kinds enabled, committed, aborted or in no
/// transaction.
fn session(g: &mut Gen<'_>, kinds: &[OpKind]) -> Op {
    let allowed: Vec<OpKind> = kinds.iter().copied().filter(|k| SESSION_KINDS.contains(k)).collect();
    let n = g.rng.random_range(2..=4);
    let base = g.tag.clone();
    let mut steps = Vec::new();
    for s in 0..n {
        let Some(kind) = pick_kind(g.rng, &allowed) else { break };
        g.tag = format!("{base}.s{s}");
        g.txn = false;
        steps.push(of_kind(g, kind));
    }
    let end = match g.rng.random_range(0..4) {
        0 | 1 => End::Commit,
        2 => End::Abort,
        _ => End::NoTxn,
    };
    Op::Session { steps, end }
}

fn parts(g: &mut Gen<'_>, kind: OpKind) -> Option<Op> {
    let txn = g.txn;
    Some(match kind {
        OpKind::RenamePart => Op::RenamePart { p: g.part(), name: g.name("p"), txn },
        OpKind::RenamePartWhere => Op::RenamePartWhere { r: g.product(), name: g.name("p"), txn },
        OpKind::RenamePartsMany => Op::RenamePartsMany { ps: g.some(PARTS, 1, 4), name: g.name("p"), txn },
        OpKind::ReplacePart => Op::ReplacePart { p: g.part(), name: g.name("p"), product: g.product(), txn },
        OpKind::SavePart => Op::SavePart { p: g.part(), name: g.name("p"), product: g.product(), txn },
        OpKind::SetPartCopy => Op::SetPartCopy { p: g.part(), name: g.name("c") },
        OpKind::PullOneTaskNote => Op::PullOneTaskNote { text: g.name("n") },
        OpKind::InsertPart => Op::InsertPart { p: g.part(), name: g.name("p"), product: g.product() },
        OpKind::UpsertPart => Op::UpsertPart { p: g.part(), name: g.name("p"), product: g.product(), txn },
        OpKind::InsertPartReturning => Op::InsertPartReturning { p: g.part(), name: g.name("p"), product: g.product() },
        OpKind::InsertManyParts => {
            let n = g.rng.random_range(2..=3);
            let mut parts: Vec<(usize, String, usize)> =
                (0..n).map(|k| (g.part(), format!("{}.{k}", g.name("p")), g.product())).collect();
            if g.rng.random_bool(0.4) {
                // A deliberate duplicate key, not first in the batch.
                parts[n - 1].0 = parts[0].0;
            }
            Op::InsertManyParts { parts }
        }
        OpKind::MovePart => Op::MovePart { p: g.part(), product: g.product(), txn },
        OpKind::MovePartsMany => Op::MovePartsMany { ps: g.some(PARTS, 1, 3), product: g.product(), txn },
        OpKind::IncPartQty => Op::IncPartQty { p: g.part(), by: g.rng.random_range(-3..=5), txn },
        OpKind::BoundPartQty => {
            Op::BoundPartQty { p: g.part(), qty: g.rng.random_range(-2..=8), max: g.rng.random_bool(0.5) }
        }
        OpKind::LabelPart => Op::LabelPart { p: g.part(), label: g.name("l") },
        OpKind::UnlabelPart => Op::UnlabelPart { p: g.part() },
        OpKind::RawUpdatePart => Op::RawUpdatePart { p: g.part(), label: g.name("l"), by: g.rng.random_range(1..=3) },
        OpKind::RawRenamePart => Op::RawRenamePart { r: g.product() },
        OpKind::DeletePart => Op::DeletePart { p: g.part() },
        OpKind::DeletePartWhere => Op::DeletePartWhere { r: g.product() },
        OpKind::DeleteManyParts => Op::DeleteManyParts { ps: g.some(PARTS, 1, 3) },
        _ => return None,
    })
}

fn products(g: &mut Gen<'_>, kind: OpKind) -> Option<Op> {
    let txn = g.txn;
    Some(match kind {
        OpKind::RenameProduct => Op::RenameProduct { r: g.product(), name: g.name("r"), txn },
        OpKind::RenameProductsMany => Op::RenameProductsMany { rs: g.some(PRODUCTS, 1, 3), name: g.name("r"), txn },
        OpKind::ReplaceProduct => Op::ReplaceProduct { r: g.product(), name: g.name("r"), parts: g.parts_list(), txn },
        OpKind::SaveProduct => Op::SaveProduct { r: g.product(), name: g.name("r"), parts: g.parts_list(), txn },
        OpKind::InsertProduct => Op::InsertProduct { r: g.product(), name: g.name("r"), parts: g.parts_list() },
        OpKind::PushPartRef => Op::PushPartRef { r: g.product(), p: g.part(), txn },
        OpKind::AddPartRef => Op::AddPartRef { r: g.product(), p: g.part() },
        OpKind::PullPartRef => Op::PullPartRef { r: g.product(), p: g.part() },
        OpKind::PullAllPartRefs => Op::PullAllPartRefs { r: g.product(), p: g.part() },
        OpKind::PullWherePartRef => Op::PullWherePartRef { r: g.product(), p: g.part() },
        OpKind::SetPartRefs => Op::SetPartRefs { r: g.product(), parts: g.parts_list() },
        OpKind::DeleteProduct => Op::DeleteProduct { r: g.product() },
        _ => return None,
    })
}

fn people(g: &mut Gen<'_>, kind: OpKind) -> Option<Op> {
    let txn = g.txn;
    Some(match kind {
        OpKind::InsertPerson => Op::InsertPerson { h: g.person(), name: g.name("h") },
        OpKind::InsertPersonWithTasks => {
            Op::InsertPersonWithTasks { h: g.person(), name: g.name("h"), tasks: g.some(TASKS, 1, 2) }
        }
        OpKind::RenamePerson => Op::RenamePerson { h: g.person(), name: g.name("h"), txn },
        OpKind::ReplacePerson => Op::ReplacePerson { h: g.person(), name: g.name("h") },
        OpKind::SavePerson => Op::SavePerson { h: g.person(), name: g.name("h") },
        OpKind::DeletePerson => Op::DeletePerson { h: g.person() },
        OpKind::DeletePersonWithTasks => Op::DeletePersonWithTasks { h: g.person() },
        OpKind::InsertTask => Op::InsertTask { t: g.task(), description: g.name("t") },
        OpKind::InsertTaskOwned => {
            Op::InsertTaskOwned { t: g.task(), h: g.below(SETUP_PEOPLE), description: g.name("t") }
        }
        OpKind::InsertTaskOwnedEarly => {
            let h = SETUP_PEOPLE + g.below(PEOPLE - SETUP_PEOPLE);
            Op::InsertTaskOwnedEarly { t: g.task(), h, description: g.name("t") }
        }
        OpKind::ReplaceTask => Op::ReplaceTask { t: g.task(), description: g.name("t") },
        OpKind::SaveTask => Op::SaveTask { t: g.task(), description: g.name("t") },
        OpKind::InsertTaskNoted => Op::InsertTaskNoted { t: g.task(), by: g.note_writers(), text: g.name("n") },
        OpKind::InsertManyTasks => {
            let n = g.rng.random_range(2..=3);
            // Half the batches are tasks no other operation names (ids past
            // the universe's): most of those succeed, where a batch of the
            // universe's ten tasks nearly always meets one already stored.
            let fresh = g.rng.random_bool(0.5);
            let mut tasks: Vec<(usize, Vec<usize>)> = (0..n)
                .map(|_| (if fresh { TASKS + g.below(0xff00 - TASKS) } else { g.task() }, g.note_writers()))
                .collect();
            if g.rng.random_bool(0.4) {
                // A deliberate duplicate key, not first in the batch.
                tasks[n - 1].0 = tasks[0].0;
            }
            Op::InsertManyTasks { tasks, text: g.name("n") }
        }
        OpKind::PushTaskNote => Op::PushTaskNote { t: g.task(), h: g.person(), text: g.name("n"), txn },
        OpKind::SetTaskNotes => Op::SetTaskNotes { t: g.task(), by: g.note_writers(), text: g.name("n") },
        OpKind::PullTaskNotes => Op::PullTaskNotes { t: g.task(), h: g.person() },
        OpKind::DeleteTask => Op::DeleteTask { t: g.task() },
        OpKind::DeleteTaskDoc => Op::DeleteTaskDoc { t: g.task() },
        OpKind::Reassign => Op::Reassign { t: g.task(), h: g.person() },
        OpKind::LinkTask => Op::LinkTask { h: g.person(), t: g.task() },
        OpKind::UnlinkTask => Op::UnlinkTask { h: g.person(), t: g.task() },
        OpKind::UnlinkOwner => Op::UnlinkOwner { t: g.task(), h: g.person() },
        OpKind::SetOwnerPlainly => Op::SetOwnerPlainly { t: g.task(), h: g.person() },
        _ => return None,
    })
}

fn reviews(g: &mut Gen<'_>, kind: OpKind) -> Option<Op> {
    let txn = g.txn;
    Some(match kind {
        OpKind::InsertItem => Op::InsertItem { i: g.item(), name: g.name("i") },
        OpKind::ReplaceItem => Op::ReplaceItem { i: g.item(), name: g.name("i") },
        OpKind::SaveItem => Op::SaveItem { i: g.item(), name: g.name("i") },
        OpKind::DeleteItem => Op::DeleteItem { i: g.item() },
        OpKind::PullSummary => Op::PullSummary { i: g.item(), v: g.review() },
        OpKind::InsertReview => Op::InsertReview { v: g.review(), i: g.item(), text: g.name("v"), date: g.date() },
        OpKind::InsertManyReviews => {
            let n = g.rng.random_range(2..=3);
            let mut reviews: Vec<(usize, usize, String, i64)> =
                (0..n).map(|k| (g.review(), g.item(), format!("{}.{k}", g.name("v")), g.date())).collect();
            if g.rng.random_bool(0.4) {
                reviews[n - 1].0 = reviews[0].0;
            }
            Op::InsertManyReviews { reviews }
        }
        OpKind::EditReviewText => Op::EditReviewText { v: g.review(), text: g.name("v"), txn },
        OpKind::EditReviewWhere => Op::EditReviewWhere { i: g.item(), text: g.name("v") },
        OpKind::EditReviewsMany => Op::EditReviewsMany { vs: g.some(REVIEWS, 1, 4), text: g.name("v"), txn },
        OpKind::EditReviewDate => Op::EditReviewDate { v: g.review(), date: g.date() },
        OpKind::ReviewNow => Op::ReviewNow { v: g.review() },
        OpKind::MoveReview => Op::MoveReview { v: g.review(), i: g.item() },
        OpKind::MoveReviewsMany => Op::MoveReviewsMany { vs: g.some(REVIEWS, 1, 4), i: g.item(), txn },
        OpKind::ReplaceReview => Op::ReplaceReview { v: g.review(), i: g.item(), text: g.name("v"), date: g.date() },
        OpKind::SaveReview => Op::SaveReview { v: g.review(), i: g.item(), text: g.name("v"), date: g.date() },
        OpKind::DeleteReview => Op::DeleteReview { v: g.review() },
        OpKind::DeleteReviewWhere => Op::DeleteReviewWhere { i: g.item() },
        OpKind::DeleteReviewDoc => Op::DeleteReviewDoc { v: g.review() },
        OpKind::DeleteManyReviews => Op::DeleteManyReviews { vs: g.some(REVIEWS, 1, 3) },
        OpKind::RebuildSubset => Op::RebuildSubset { i: g.item() },
        _ => return None,
    })
}

fn others(g: &mut Gen<'_>, kind: OpKind) -> Option<Op> {
    Some(match kind {
        OpKind::InsertPost => Op::InsertPost { b: g.post() },
        OpKind::DeletePost => Op::DeletePost { b: g.post() },
        OpKind::AppendComment => Op::AppendComment { b: g.post(), text: g.name("c") },
        OpKind::AppendComments => {
            let n = 2 + g.below(5);
            Op::AppendComments { comments: (0..n).map(|k| (g.post(), format!("{}.{k}", g.name("c")))).collect() }
        }
        OpKind::BumpPageCount => Op::BumpPageCount { b: g.post() },
        OpKind::Repair | OpKind::Verify => {
            let source = [Source::Part, Source::Product, Source::Person][g.below(3)];
            if kind == OpKind::Repair {
                Op::Repair { source }
            } else {
                Op::Verify { source }
            }
        }
        OpKind::FaultOn => Op::FaultOn { fault: fault(g.rng) },
        OpKind::FaultOff => Op::FaultOff {},
        _ => return None,
    })
}

fn fault(rng: &mut ChaCha8Rng) -> Fault {
    let n = rng.random_range(1..=3);
    let mut commands: Vec<String> = Vec::new();
    while commands.len() < n {
        let c = FAULT_COMMANDS[rng.random_range(0..FAULT_COMMANDS.len())];
        if !commands.iter().any(|k| k == c) {
            commands.push(c.to_owned());
        }
    }
    let error_code =
        if rng.random_bool(0.5) { None } else { Some(FAULT_CODES[rng.random_range(0..FAULT_CODES.len())]) };
    // A commit cut more than once leaves its transaction open on the
    // server until it is reaped (60 s), stalling every writer of its
    // documents: one cut commit (the driver retries it) is the case of
    // interest (an unknown commit result).
    // A quarter of the faults let the write land and answer a write-concern
    // error: the outcome is unknown to docrel (issue 38, review 3), a
    // commit's too (the driver retries it; after three, docrel's own
    // transactions retry the whole body, and the commit was applied).
    let write_concern = rng.random_bool(0.25);
    if write_concern {
        commands.retain(|c| WRITE_COMMANDS.contains(&c.as_str()));
        if commands.is_empty() {
            commands.push(WRITE_COMMANDS[rng.random_range(0..WRITE_COMMANDS.len())].to_owned());
        }
    }
    let cut_commit = !write_concern && commands.iter().any(|c| c == "commitTransaction");
    let times = if cut_commit { 1 } else { rng.random_range(1..=3) };
    Fault { commands, times, error_code, write_concern }
}
