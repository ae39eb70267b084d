//! Documents encoded for a write of whole documents: bounds and size
//! checked, copies filled from their sources, a new source's first
//! version, before anything is sent.

use super::document::DocumentPlan;
use super::sides::TwoWaySides;
use crate::bson_compat;
use crate::denormalize::fanout;
use crate::denormalize::fill::{self, Sources};
use crate::error::{Error, Result};
use crate::id::DocId;
use crate::patterns::subset;
use crate::schema::document::Document;
use crate::store::codec::encode;
use crate::store::session::Cx;
use mongodb::bson::{self, RawDocumentBuf};

/// Documents encoded for a write.
#[derive(Clone)]
pub(super) struct Encoded {
    pub(super) raws: Vec<RawDocumentBuf>,
    /// The same as BSON documents, when something is derived from or held by them.
    pub(super) plain: Vec<bson::Document>,
    /// The sources their copies were filled from.
    pub(super) filled: Option<Sources>,
}

/// Encodes documents for a write: bounds, copies filled from their
/// sources (one read per source collection for the batch), a source's
/// first version when `inserting`, size, and their two-way references
/// checked by `sides`. When something is derived from or held by them the
/// BSON documents come back too, so they are built once.
pub(super) async fn encode_all<T: Document>(
    cx: &mut Cx<'_>,
    docs: &[T],
    inserting: bool,
    plan: &DocumentPlan,
    sides: &dyn TwoWaySides,
) -> Result<Encoded> {
    for d in docs {
        d.check_bounds()?;
    }
    crate::patterns::bucket_whole::check_all(T::schema(), docs)?;
    // An `Option` id that is `None` is made here, before anything is
    // filled or written, so that everything the insert owes knows it.
    let fresh: Vec<Option<T::Id>> =
        docs.iter().map(|d| if inserting && d.id().is_none() { T::generate_id() } else { None }).collect();
    let derived = plan.fills || plan.owes(inserting);
    if !derived && fresh.iter().all(Option::is_none) {
        let raws: Vec<RawDocumentBuf> = docs.iter().map(|d| encode(T::COLLECTION, d)).collect::<Result<_>>()?;
        crate::store::bounds::check_stored(plan.graph, T::COLLECTION, &raws)?;
        return Ok(Encoded { raws, plain: Vec::new(), filled: None });
    }
    let mut plain = docs
        .iter()
        .map(|d| {
            bson_compat::to_document(d).map_err(|e| Error::Encode {
                what: format!("a document of `{}`", T::COLLECTION),
                message: e.to_string(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    for (d, id) in plain.iter_mut().zip(fresh) {
        if let Some(id) = id {
            with_id(d, id.to_bson());
        }
    }
    let filled = if plan.fills { Some(fill::fill(cx, T::schema(), &mut plain).await?) } else { None };
    if inserting {
        if plan.source {
            fanout::stamp_first_version(&mut plain);
        }
        plan.clear_kept(T::schema(), &mut plain);
    }
    subset::check(plan.graph, T::COLLECTION, &plain)?;
    if plan.two_way {
        sides.check(plan.graph, T::schema(), &plain)?;
    }
    let raws: Vec<RawDocumentBuf> = plain.iter().map(|d| encode(T::COLLECTION, d)).collect::<Result<_>>()?;
    crate::store::bounds::check_stored(plan.graph, T::COLLECTION, &raws)?;
    Ok(Encoded { raws, plain: if derived { plain } else { Vec::new() }, filled })
}

/// Sets `_id` of `doc` to `id`, as its first field (where MongoDB keeps
/// it), in place of the `null` or nothing serde wrote for `None`.
fn with_id(doc: &mut bson::Document, id: bson::Bson) {
    let mut out = bson::Document::new();
    out.insert("_id", id);
    for (k, v) in std::mem::take(doc) {
        if k != "_id" {
            out.insert(k, v);
        }
    }
    *doc = out;
}

/// The document as BSON: the encoded one when there is one.
pub(super) fn plain_or(plain: &[bson::Document], raw: &RawDocumentBuf) -> Result<bson::Document> {
    match plain.first() {
        Some(p) => Ok(p.clone()),
        None => bson::Document::try_from(raw.as_ref())
            .map_err(|e| Error::Encode { what: "a document".into(), message: e.to_string() }),
    }
}
