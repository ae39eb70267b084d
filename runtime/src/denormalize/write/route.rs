//! Which way an update runs, decided once from what is known before it
//! is sent, by a pure table: every route the plan can take is a row of
//! [`decide`], and each row has its test below. The plan then only runs
//! the route; when a stamped route finds it cannot finish (nothing
//! matched, no answer from a batch), the plan clears the fact that chose
//! it and asks the table again, so a fallback is a row too.

use super::outcome::Mode;

/// Which documents an update writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    /// The document of one `_id` (`update_by_id`).
    ById,
    /// The first document a filter matches (`update_one`, an upsert's update).
    First,
    /// Every document a filter matches.
    Every,
}

/// What the route of an update depends on, all known before it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Facts {
    pub(super) target: Target,
    pub(super) mode: Mode,
    /// It changes a field something is derived from (a copy elsewhere, a
    /// subset summary): the source is versioned and fanned out.
    pub(super) derived: bool,
    /// It writes references or copies the type holds: their holders are
    /// known first, page by page unless by id.
    pub(super) holdings: bool,
    /// It does more than pull elements (its pruned body): the holders'
    /// copies need a refresh. Only read with `holdings`.
    pub(super) refreshes: bool,
    /// It can be stamped: a `$set` of every derived field alone, by a
    /// plain `_id` filter, of a versioned source; and no stamped attempt
    /// of this write has matched nothing yet.
    pub(super) stampable: bool,
    /// The type is summarized in a subset: the rebuild reads an image of
    /// the source, which a batch cannot carry.
    pub(super) summarized: bool,
    /// The deployment takes a client-level `bulkWrite` (MongoDB 8.0+), and
    /// no batch of this write has gone unanswered.
    pub(super) bulk: bool,
}

/// How the write itself and its fan-out run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Way {
    /// Nothing derived is written: the driver's update alone.
    Plain,
    /// Deferred mode: the source's version moves on and the sync worker
    /// fans out later.
    Versioned,
    /// The stamped write and every fan-out in one `bulkWrite`.
    Batch,
    /// A stamped write by id; the copies read their values from its `$set`.
    StampedFromSet,
    /// A stamped write; the fan-out reads the image it knows.
    Stamped,
    /// `findAndModify` returns the new values, then the fan-out.
    ReadBack,
    /// Page by page: the ids, one `updateMany`, the new values read, each fan-out.
    Pages,
    /// `findAndModify` and the copies' fan-out in one transaction, the
    /// subsets rebuilt after the commit.
    InTransaction,
    /// Every page and its whole fan-out in one transaction.
    PagesInTransaction,
}

/// When the copies of the holders of written references are refreshed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refresh {
    /// No reference brought: nothing to refresh.
    No,
    /// After the write, when it matched.
    After,
    /// Inside the write's transaction.
    Inside,
}

/// The route of an update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Route {
    pub(super) way: Way,
    pub(super) refresh: Refresh,
    /// The write runs once per page of the holders' ids (bounded memory and `$in`).
    pub(super) holder_pages: bool,
}

/// The table.
pub(super) fn decide(f: Facts) -> Route {
    use {Mode::*, Target::*};
    // A write of holdings refreshes them (by a filter, under a `$and` a
    // stamped write refuses): never stamped.
    let stamped = f.stampable && !f.holdings;
    let way = match (f.derived, f.mode, f.target) {
        (false, _, _) => Way::Plain,
        (true, Deferred, _) => Way::Versioned,
        (true, Transactional, Every) => Way::PagesInTransaction,
        (true, Transactional, ById | First) => Way::InTransaction,
        (true, Immediate, Every) => Way::Pages,
        (true, Immediate, ById) if stamped && !f.summarized && f.bulk => Way::Batch,
        (true, Immediate, ById) if stamped && !f.summarized => Way::StampedFromSet,
        (true, Immediate, ById | First) if stamped => Way::Stamped,
        (true, Immediate, ById | First) => Way::ReadBack,
    };
    let refresh = match (f.holdings && f.refreshes, way) {
        (false, _) => Refresh::No,
        (true, Way::InTransaction | Way::PagesInTransaction) => Refresh::Inside,
        (true, _) => Refresh::After,
    };
    Route { way, refresh, holder_pages: f.holdings && f.target != ById }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain update by id of a type nothing is derived from.
    fn facts() -> Facts {
        Facts {
            target: Target::ById,
            mode: Mode::Immediate,
            derived: false,
            holdings: false,
            refreshes: false,
            stampable: false,
            summarized: false,
            bulk: false,
        }
    }

    /// A write of derived fields, stampable, on 8.0+.
    fn derived() -> Facts {
        Facts { derived: true, stampable: true, bulk: true, ..facts() }
    }

    fn way(f: Facts) -> Way {
        decide(f).way
    }

    #[test]
    fn nothing_derived_is_plain_whatever_the_mode_or_target() {
        for mode in [Mode::Immediate, Mode::Deferred, Mode::Transactional] {
            for target in [Target::ById, Target::First, Target::Every] {
                assert_eq!(way(Facts { mode, target, stampable: true, bulk: true, ..facts() }), Way::Plain);
            }
        }
    }

    #[test]
    fn deferred_only_versions() {
        for target in [Target::ById, Target::First, Target::Every] {
            assert_eq!(way(Facts { mode: Mode::Deferred, target, ..derived() }), Way::Versioned);
        }
    }

    #[test]
    fn transactional_many_pages_in_one_transaction() {
        assert_eq!(
            way(Facts { mode: Mode::Transactional, target: Target::Every, ..derived() }),
            Way::PagesInTransaction
        );
    }

    #[test]
    fn transactional_one_reads_back_in_a_transaction_never_stamped() {
        for target in [Target::ById, Target::First] {
            assert_eq!(way(Facts { mode: Mode::Transactional, target, ..derived() }), Way::InTransaction);
        }
    }

    #[test]
    fn many_immediate_goes_page_by_page() {
        assert_eq!(way(Facts { target: Target::Every, ..derived() }), Way::Pages);
    }

    #[test]
    fn stampable_by_id_without_subsets_on_8_0_is_one_batch() {
        assert_eq!(way(derived()), Way::Batch);
    }

    #[test]
    fn stampable_by_id_without_a_batch_reads_the_set() {
        assert_eq!(way(Facts { bulk: false, ..derived() }), Way::StampedFromSet);
    }

    #[test]
    fn stampable_with_subsets_or_by_filter_fans_out_its_image() {
        assert_eq!(way(Facts { summarized: true, ..derived() }), Way::Stamped);
        assert_eq!(way(Facts { target: Target::First, ..derived() }), Way::Stamped);
        assert_eq!(way(Facts { target: Target::First, bulk: false, ..derived() }), Way::Stamped);
    }

    #[test]
    fn one_not_stampable_or_holding_reads_back() {
        for target in [Target::ById, Target::First] {
            assert_eq!(way(Facts { target, stampable: false, ..derived() }), Way::ReadBack);
            assert_eq!(way(Facts { target, holdings: true, ..derived() }), Way::ReadBack);
        }
    }

    #[test]
    fn no_reference_brought_refreshes_nothing() {
        assert_eq!(decide(Facts { holdings: true, refreshes: false, ..derived() }).refresh, Refresh::No);
        assert_eq!(decide(Facts { holdings: false, refreshes: true, ..derived() }).refresh, Refresh::No);
    }

    #[test]
    fn a_transaction_refreshes_its_holders_inside() {
        for target in [Target::ById, Target::First, Target::Every] {
            let f = Facts { mode: Mode::Transactional, target, holdings: true, refreshes: true, ..derived() };
            assert_eq!(decide(f).refresh, Refresh::Inside);
        }
    }

    #[test]
    fn any_other_way_refreshes_after_the_write() {
        let held = Facts { holdings: true, refreshes: true, ..derived() };
        assert_eq!(decide(held).refresh, Refresh::After);
        assert_eq!(decide(Facts { mode: Mode::Deferred, ..held }).refresh, Refresh::After);
        let plain = Facts { mode: Mode::Transactional, derived: false, ..held };
        assert_eq!(decide(plain), Route { way: Way::Plain, refresh: Refresh::After, holder_pages: false });
    }

    #[test]
    fn holders_by_a_filter_are_paged_by_id_not() {
        let held = Facts { holdings: true, ..derived() };
        assert!(!decide(held).holder_pages);
        assert!(decide(Facts { target: Target::First, ..held }).holder_pages);
        assert!(decide(Facts { target: Target::Every, ..held }).holder_pages);
        assert!(!decide(Facts { target: Target::Every, ..derived() }).holder_pages);
    }
}
