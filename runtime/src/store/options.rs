//! What a read asks besides its collection (a filter, an order, a count, a
//! skip, a batch size), held by every read builder, and the builders'
//! setters written once ([`read_setters`]): the find, the loads and joins,
//! the children and referrers of relations.

use super::query::{Filter, Sort};
use crate::error::{Error, Misuse, Result};
use mongodb::bson::{self, doc};
use mongodb::options::FindOptions;

/// Asks the server for everything in one batch (it still caps a batch at
/// 16 MiB): a read that fits is one round trip, not `find` + `getMore`s.
pub(crate) const ONE_BATCH: u32 = i32::MAX as u32;

/// A count the caller gave (`limit`, `skip`, a page), as the `i64` MongoDB
/// takes: counts are `u64` in the API, and one above `i64::MAX` is refused
/// here, before anything is sent, instead of wrapping to a negative number
/// (which the server reads as something else) or failing in the driver.
pub(crate) fn count(call: &'static str, n: u64) -> Result<i64> {
    i64::try_from(n).map_err(|_| Error::Invalid {
        what: Misuse::Count,
        message: format!(
            "`{call}({n})` is above {}, the largest count MongoDB takes; nothing was sent. \
             Ask for at most i64::MAX, or leave `{call}` out",
            i64::MAX
        ),
    })
}

/// A batch size the caller gave, as the driver takes it: the server caps a
/// batch at `i32::MAX` documents (and 16 MiB), so a larger one asks for
/// the same, as many as fit in one batch.
pub(crate) fn batch(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX).min(ONE_BATCH)
}

/// The options of a read. The filter is `None` until one is given, so a
/// load can tell a plain `$in` (merged with others) from a filtered one.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReadOptions {
    pub(crate) filter: Option<Filter>,
    pub(crate) sort: Option<Sort>,
    pub(crate) limit: Option<u64>,
    pub(crate) skip: Option<u64>,
    pub(crate) batch_size: Option<u64>,
}

impl ReadOptions {
    /// Options with `filter` and nothing else.
    pub(crate) fn filtered(filter: Filter) -> Self {
        ReadOptions { filter: Some(filter), ..ReadOptions::default() }
    }

    /// Options in the order `sort` (a declared one), and nothing else.
    pub(crate) fn sorted(sort: Option<Sort>) -> Self {
        ReadOptions { sort, ..ReadOptions::default() }
    }

    /// Adds `filter` to the one given so far.
    pub(crate) fn and(&mut self, filter: Filter) {
        self.filter = Some(match self.filter.take() {
            Some(f) => f.and(filter),
            None => filter,
        });
    }

    /// `base` and the filter given, if any.
    pub(crate) fn within(&self, base: Filter) -> Filter {
        match &self.filter {
            Some(f) => base.and(f.clone()),
            None => base,
        }
    }

    /// Whether nothing but the ids is asked (no filter, order or limit).
    pub(crate) fn is_plain(&self) -> bool {
        self.filter.is_none() && self.sort.is_none() && self.limit.is_none()
    }

    /// The read as the first stages of an aggregate: `$match`, then
    /// `$sort`, `$skip`, `$limit` and the `$project` of `projection`, each
    /// when asked.
    pub(crate) fn stages(self, projection: bson::Document) -> Result<Vec<bson::Document>> {
        let mut stages = vec![doc! {"$match": self.filter.unwrap_or_default().into_document()?}];
        if let Some(s) = self.sort {
            stages.push(doc! {"$sort": s.into_document()});
        }
        if let Some(s) = self.skip {
            stages.push(doc! {"$skip": count("skip", s)?});
        }
        if let Some(l) = self.limit {
            stages.push(doc! {"$limit": count("limit", l)?});
        }
        if !projection.is_empty() {
            stages.push(doc! {"$project": projection});
        }
        Ok(stages)
    }

    /// The driver's options of a read that takes every result in one
    /// batch, with `projection`; a limit or skip above `i64::MAX` is an error.
    pub(crate) fn one_batch(&self, projection: Option<bson::Document>) -> Result<FindOptions> {
        let mut options = FindOptions::default();
        options.batch_size = Some(ONE_BATCH);
        options.projection = projection;
        options.sort = self.sort.as_ref().map(|s| s.as_document().clone());
        options.limit = self.limit.map(|l| count("limit", l)).transpose()?;
        options.skip = self.skip.map(|s| count("skip", s).map(|_| s)).transpose()?;
        Ok(options)
    }
}

/// Writes setters of a read builder, each from its one definition here:
/// the builder names the setters it offers, each with its doc comment and
/// the field it sets (a [`ReadOptions`] for `filter`, `sort`, `limit`,
/// `skip` and `batch_size`; an `Option<&mut ClientSession>` for `session`,
/// whose lifetime is given; a `usize` for `chunk`).
///
/// ```text
/// read_setters! {
///     /// Only the children matching `filter` too.
///     filter => read;
///     /// Reads in `session`.
///     session<'a> => session;
/// }
/// ```
macro_rules! read_setters {
    ($($(#[$doc:meta])* $setter:ident $(<$lt:lifetime>)? => $($at:ident).+;)*) => {
        $($crate::store::options::read_setters!(@ $setter $(<$lt>)? [$(#[$doc])*] $($at).+);)*
    };
    (@ filter [$($doc:tt)*] $($at:ident).+) => {
        $($doc)*
        pub fn filter(mut self, filter: impl Into<$crate::store::query::Filter>) -> Self {
            self.$($at).+.and(filter.into());
            self
        }
    };
    (@ chunk [$($doc:tt)*] $($at:ident).+) => {
        $($doc)*
        pub fn chunk(mut self, n: usize) -> Self {
            self.$($at).+ = n;
            self
        }
    };
    (@ sort $doc:tt $($at:ident).+) => {
        $crate::store::options::read_setters!(@some sort(sort: $crate::store::query::Sort) $doc $($at).+.sort);
    };
    (@ limit $doc:tt $($at:ident).+) => {
        $crate::store::options::read_setters!(@some limit(n: u64) $doc $($at).+.limit);
    };
    (@ skip $doc:tt $($at:ident).+) => {
        $crate::store::options::read_setters!(@some skip(n: u64) $doc $($at).+.skip);
    };
    (@ batch_size $doc:tt $($at:ident).+) => {
        $crate::store::options::read_setters!(@some batch_size(n: u64) $doc $($at).+.batch_size);
    };
    (@ session <$lt:lifetime> $doc:tt $($at:ident).+) => {
        $crate::store::options::read_setters!(@some session(session: &$lt mut ::mongodb::ClientSession) $doc $($at).+);
    };
    // The setters of an optional field: `value` replaces what was set.
    (@some $name:ident($value:ident: $ty:ty) [$($doc:tt)*] $($at:ident).+) => {
        $($doc)*
        pub fn $name(mut self, $value: $ty) -> Self {
            self.$($at).+ = Some($value);
            self
        }
    };
}
pub(crate) use read_setters;
