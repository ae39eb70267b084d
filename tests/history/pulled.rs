//! [`Inv::Pulled`]: `on_delete = pull` reaches the notes of tasks
//! (`tasks.notes[].who`). No stored field says that a person was deleted,
//! so the history says it: a person absent at the end whose last delete
//! (`delete_by_id` of `DeletePerson` or `DeletePersonWithTasks`, not in a
//! session) returned `Ok(true)` leaves no note written before that delete
//! started (a `DeletePersonWithTasks`'s start: before its delete). A
//! note's text names the operation that made it; a replace or save of its
//! task writes it back.
//!
//! What is not held to it, since the pull may rightly miss it: a note
//! written while the delete ran or after it (a replace that read the task
//! before the delete, a push of a note by someone gone: a reference to a
//! missing document is allowed, and dangles), and any person an operation
//! may have inserted again once the delete started (docrel's rules skip a
//! document that is back, see `on_delete.rs`).
//!
//! The times are the records': an operation's start is taken before it
//! waits for the gate, its end after it returned (for the second process,
//! once its record arrived here), so each interval holds the call's.

use super::check::{array, by_id, key, show, v, Facts, Inv, Snapshot, Violation};
use super::op::Op;
use super::run::{Record, Res};
use super::universe::{notes, Universe};
use docrel::bson::Bson;
use std::time::Duration;

/// What of a history [`pulled`] reads: when people were deleted and
/// created, and when each note was written.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// A person and the start of a delete of it that returned `Ok(true)`.
    pub deletes: Vec<(Bson, Duration)>,
    /// A person and the end of an operation that may have inserted it.
    pub creations: Vec<(Bson, Duration)>,
    /// A note's text (unique to the operation making it) and the end of
    /// that operation.
    pub notes: Vec<(String, Duration)>,
    /// A task and the end of an operation that may have written its notes
    /// back as read (a replace or a save).
    pub rewrites: Vec<(Bson, Duration)>,
}

/// The texts of the notes `step` makes (see `universe::notes`).
fn notes_made_by(step: &Op) -> Vec<String> {
    let texts = |by: &[usize], text: &str| notes(by, text).into_iter().map(|n| n.text).collect::<Vec<_>>();
    match step {
        Op::InsertTaskNoted { by, text, .. } | Op::SetTaskNotes { by, text, .. } => texts(by, text),
        Op::PushTaskNote { h, text, .. } => texts(&[*h], text),
        Op::InsertManyTasks { tasks, text } => {
            tasks.iter().enumerate().flat_map(|(k, (_, by))| texts(by, &format!("{text}.{k}"))).collect()
        }
        _ => Vec::new(),
    }
}

/// The task whose notes `step` may write back as read.
fn task_rewritten_by(step: &Op) -> Option<usize> {
    match step {
        Op::ReplaceTask { t, .. } | Op::SaveTask { t, .. } => Some(*t),
        _ => None,
    }
}

/// The person `step` may insert.
fn person_created_by(step: &Op) -> Option<usize> {
    match step {
        Op::InsertPerson { h, .. } | Op::InsertPersonWithTasks { h, .. } | Op::SavePerson { h, .. } => Some(*h),
        _ => None,
    }
}

impl Timeline {
    /// The timeline of the operations as they ran (a session's steps
    /// count with the session's times). A refused operation wrote nothing,
    /// but a batch insert (its documents before the refused one stand) and
    /// a session (its steps before the refused one stand without a
    /// transaction).
    pub fn of(records: &[Record]) -> Timeline {
        let mut t = Timeline::default();
        for r in records {
            if let (Op::DeletePerson { h } | Op::DeletePersonWithTasks { h }, Res::Ok(said)) = (&r.op, &r.res) {
                if said.ends_with("deleted true") {
                    t.deletes.push((Bson::ObjectId(Universe::person(*h)), r.start));
                }
            }
            let wrote =
                !matches!(r.res, Res::Refused(_)) || matches!(r.op, Op::Session { .. } | Op::InsertManyTasks { .. });
            for step in r.op.steps() {
                if let Some(h) = person_created_by(step) {
                    t.creations.push((Bson::ObjectId(Universe::person(h)), r.end));
                }
                if !wrote {
                    continue;
                }
                t.notes.extend(notes_made_by(step).into_iter().map(|text| (text, r.end)));
                if let Some(task) = task_rewritten_by(step) {
                    t.rewrites.push((Bson::ObjectId(Universe::task(task)), r.end));
                }
            }
        }
        t
    }

    /// The start of the last delete of `person` that its pull must have
    /// followed: none when an operation that may have inserted it again
    /// ended after that delete started.
    fn binding_delete(&self, person: &Bson) -> Option<Duration> {
        let last = self.deletes.iter().filter(|(p, _)| p == person).map(|(_, at)| *at).max()?;
        let again = self.creations.iter().any(|(p, end)| p == person && *end > last);
        (!again).then_some(last)
    }

    /// When the note `text` on `task` was last written: made, or written
    /// back by a replace or save of the task (zero: by the setup alone).
    fn last_written(&self, task: &Bson, text: &str) -> Duration {
        let made = self.notes.iter().filter(|(t, _)| t == text).map(|(_, end)| *end);
        let back = self.rewrites.iter().filter(|(t, _)| t == task).map(|(_, end)| *end);
        made.chain(back).max().unwrap_or_default()
    }
}

/// [`Inv::Pulled`] over the stored tasks (see the module's head).
pub fn pulled(s: &Snapshot, facts: &Facts) -> Vec<Violation> {
    let people = by_id(&s.people);
    let mut out = Vec::new();
    for task in &s.tasks {
        let Some(id) = task.get("_id") else { continue };
        for (k, note) in array(task, "notes").into_iter().enumerate() {
            let Some(note) = note.as_document() else { continue };
            let Some(who) = note.get("who") else { continue };
            if people.contains_key(&key(who)) {
                continue;
            }
            let Some(deleted) = facts.pulls.binding_delete(who) else { continue };
            let written = facts.pulls.last_written(id, note.get_str("text").unwrap_or_default());
            if written < deleted {
                out.push(v(
                    Inv::Pulled,
                    format!(
                        "task {} notes[{k}] {note} is by person {who}, whose delete started at {:.3}s and returned \
                         Ok(true), after the note was last written ({:.3}s): the pull left it",
                        show(Some(id)),
                        deleted.as_secs_f64(),
                        written.as_secs_f64()
                    ),
                ));
            }
        }
    }
    out
}
