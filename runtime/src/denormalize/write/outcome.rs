//! The vocabulary of a planned write: what it applies to, how it fans
//! out, and what it did.

/// What an update did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UpdateOutcome {
    /// Documents the filter matched (with room for any bounded push).
    pub matched: u64,
    /// Documents actually changed.
    pub modified: u64,
}

impl UpdateOutcome {
    pub(super) fn add(&mut self, other: UpdateOutcome) {
        self.matched += other.matched;
        self.modified += other.modified;
    }
}

/// What an upsert did: the update of a matching document, or the insert
/// of a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpsertOutcome<I> {
    /// Documents the filter matched: 1, or 0 when it inserted.
    pub matched: u64,
    /// Documents changed by the update (0 when it inserted).
    pub modified: u64,
    /// The `_id` of the document inserted, when none matched.
    pub upserted_id: Option<I>,
}

/// How a repository's writes fan out (its `deferred_fan_out()` and
/// `transactional_fan_out()`).
pub(crate) use crate::schema::repository::Mode;

/// What an update applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The first matching document.
    One,
    /// Every matching document.
    Many,
}

impl Scope {
    pub(crate) fn of(many: bool) -> Scope {
        if many {
            Scope::Many
        } else {
            Scope::One
        }
    }
}

/// Sets an option of a driver action only when there is a value for it.
pub(super) trait Optional: Sized {
    fn optional<V>(self, value: Option<V>, set: impl FnOnce(Self, V) -> Self) -> Self {
        match value {
            Some(v) => set(self, v),
            None => self,
        }
    }
}
impl<T> Optional for T {}
