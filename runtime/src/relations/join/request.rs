//! What a load asks: the requests the executor runs (one relation each,
//! alone or in a tuple), their filter, order and limits, and the names the
//! loaders share.

use crate::error::Result;
use crate::store::options::ReadOptions;
use mongodb::bson::{self, Bson, RawDocument};

/// The generated function that yields the ids held in a reference field
/// (an id, an `Option` of one, an array of ids or of `{id, ..}` elements), in order.
pub(crate) type FieldVisit<F, I> = fn(&F, &mut dyn FnMut(&I));

/// The maps of the loaders, keyed by ids that come from the database (the
/// parents' reference fields and the loaded documents' `_id`s), never from a
/// party that could choose keys to collide: a fast non-cryptographic hasher
/// (foldhash, seeded per map) instead of SipHash.
pub(crate) type IdMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// How many ids one `$in` query carries at most; longer lists are split
/// into chunks of this size (each one more round trip).
pub const DEFAULT_CHUNK: usize = 20_000;

/// What a load asks of the loaded documents besides their ids: a filter,
/// an order, a total limit, a limit per parent (`load_where`, Mongoose's
/// `match`, `options` and `perDocumentLimit`).
#[derive(Debug, Clone, Default)]
#[doc(hidden)]
pub struct LoadQuery {
    pub(crate) read: ReadOptions,
    pub(crate) per_parent: Option<u64>,
    /// How many of each parent's documents to skip before `per_parent`.
    pub(crate) skip_per_parent: u64,
}

impl LoadQuery {
    /// Whether the server query is the plain `$in` (so it can be merged
    /// with other relations into the same collection).
    pub(crate) fn is_plain(&self) -> bool {
        self.read.is_plain()
    }
}

/// One relation load waiting to run, as the executor sees it.
#[doc(hidden)]
pub trait Pending: Send {
    /// The collection queried.
    fn collection(&self) -> &'static str;
    /// The field matched with `$in` (`_id`, or the parent field).
    fn key_path(&self) -> &'static str;
    /// The distinct ids to match.
    fn ids(&mut self) -> Vec<Bson>;
    /// The fields to project, `None` for whole documents.
    fn projection(&self) -> Option<&'static [&'static str]>;
    /// Takes one returned document (which may belong to another request of
    /// the same collection).
    fn absorb(&mut self, raw: &RawDocument) -> Result<()>;
    /// The filter, order and limit on the loaded documents, if any.
    fn query(&self) -> Option<&LoadQuery> {
        None
    }
}

/// A relation load that yields a result once run.
pub trait Request: Pending {
    /// What the load yields.
    type Output;
    #[doc(hidden)]
    fn finish(self) -> Self::Output;
}

/// One request, or a tuple of up to four, to run together with [`super::join`].
pub trait JoinSet {
    /// What the join yields: the outputs of the requests, in order.
    type Output;
    #[doc(hidden)]
    fn pendings(&mut self) -> Vec<&mut dyn Pending>;
    #[doc(hidden)]
    fn finish(self) -> Self::Output;
}

impl<R: Request> JoinSet for R {
    type Output = R::Output;
    fn pendings(&mut self) -> Vec<&mut dyn Pending> {
        vec![self]
    }
    fn finish(self) -> Self::Output {
        Request::finish(self)
    }
}

macro_rules! tuple_join {
    ($($name:ident . $i:tt),+) => {
        impl<$($name: Request),+> JoinSet for ($($name,)+) {
            type Output = ($($name::Output,)+);
            fn pendings(&mut self) -> Vec<&mut dyn Pending> {
                vec![$(&mut self.$i),+]
            }
            fn finish(self) -> Self::Output {
                ($(self.$i.finish(),)+)
            }
        }
    };
}
tuple_join!(A.0, B.1);
tuple_join!(A.0, B.1, C.2);
tuple_join!(A.0, B.1, C.2, D.3);

/// The union of the fields of `projections` and `key`, or `None` (whole
/// documents) when one of them asks for whole documents.
pub(crate) fn union_projection<'a>(
    projections: impl Iterator<Item = Option<&'a [&'a str]>>,
    key: &str,
) -> Option<bson::Document> {
    let mut out = bson::Document::new();
    for p in projections {
        for f in p? {
            out.insert(*f, 1);
        }
    }
    out.insert(key, 1);
    Some(out)
}
