//! What a move's run reports as it goes ([`super::run`]): each step in
//! words, and the copy's progress, counted, so the command line can draw a
//! bar with its rate and time left.

use serde::Serialize;

/// One report of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// A step in words: a state entered, an index built, a wait, a stop.
    Said(String),
    /// The copy of one move went on by a page.
    Copied(Copied),
}

/// How far the copy of one move is, in this run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Copied {
    /// `posts.comments → comments`.
    pub label: String,
    /// Parents whose elements this run copied so far.
    pub parents: u64,
    /// Elements (documents of the new collection) this run copied so far.
    pub elements: u64,
    /// Parents holding elements that were left to copy when this run began.
    pub total_parents: u64,
    /// Their elements.
    pub total_elements: u64,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Said(words) => f.write_str(words),
            Step::Copied(c) => write!(
                f,
                "{}: copied {} of {} element(s), from {} of {} parent(s)",
                c.label, c.elements, c.total_elements, c.parents, c.total_parents
            ),
        }
    }
}

impl From<String> for Step {
    fn from(words: String) -> Step {
        Step::Said(words)
    }
}

impl From<&str> for Step {
    fn from(words: &str) -> Step {
        Step::Said(words.to_owned())
    }
}
