//! A replace (or upsert) of a document something is derived from, or that
//! keeps derived data: the write keeps docrel's bookkeeping and what docrel
//! maintains, then the copies and summaries of the changed fields follow.

use super::document::DocumentPlan;
use super::outcome::{Mode, Optional};
use crate::denormalize::fanout;
use crate::error::{Error, Result};
use crate::schema::document::Document;
use crate::store::path::lookup;
use crate::store::session::{in_session, Cx};
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocumentBuf};
use mongodb::options::ReturnDocument;
use mongodb::Collection;

/// Replaces (or upserts, `upsert`) the document of `T` that `filter`
/// finds with `new`: in the same atomic write the copy records are those
/// of the fill, not the stored ones, and (for a source with copies
/// elsewhere) the version moves on when a derived field changes; then the
/// copies and summaries of the changed fields are rewritten. Returns
/// whether the document was created, or `None` when a replace found none.
///
/// A source's fan-out takes its version and values from the image *after*
/// the write, never from the one before it: both are atomic with the write
/// on MongoDB, but the embedded test server returns a pre-image read before
/// it takes its lock, so two racing replaces could both fan out the same
/// version with different values. Which fields changed and whether the
/// document is new are then told by the version itself (see
/// [`fanout::replace_version`]).
pub(crate) async fn replace_image<T: Document>(
    cx: &mut Cx<'_>,
    raw: &Collection<RawDocumentBuf>,
    filter: BsonDoc,
    new: BsonDoc,
    upsert: bool,
    mode: Mode,
    plan: &DocumentPlan,
) -> Result<Option<bool>> {
    if !plan.source {
        return replace_summarized::<T>(cx, raw, filter, new, upsert, mode, plan).await;
    }
    let stamp = fanout::first_version();
    if mode == Mode::Transactional {
        return Box::pin(replace_in_transaction::<T>(cx, raw, filter, new, upsert, plan, stamp)).await;
    }
    let Some(after) = write_image::<T>(cx, raw, filter, &new, upsert, plan, stamp).await? else { return Ok(None) };
    let (created, changed) = fanout::replace_outcome(fanout::version_of(&after), stamp);
    if changed && mode != Mode::Deferred {
        fanout::fan_out(cx, T::COLLECTION, &after, None).await?;
    }
    Ok(Some(created))
}

/// The replace of a source and its copies' fan-out in one transaction (in
/// the caller's when its session is in one); its subsets are rebuilt after
/// the commit, from the committed state, as an update's are.
async fn replace_in_transaction<T: Document>(
    cx: &mut Cx<'_>,
    raw: &Collection<RawDocumentBuf>,
    filter: BsonDoc,
    new: BsonDoc,
    upsert: bool,
    plan: &DocumentPlan,
    stamp: i64,
) -> Result<Option<bool>> {
    let (raw, db, plan) = (raw.clone(), cx.db.clone(), *plan);
    let after = crate::store::transaction::run_or_join(cx, "transactional fan-out", &mut |session| {
        let (raw, db, filter, new) = (raw.clone(), db.clone(), filter.clone(), new.clone());
        Box::pin(async move {
            let cx = &mut Cx::new(&db, Some(session));
            let Some(after) = write_image::<T>(cx, &raw, filter, &new, upsert, &plan, stamp).await? else {
                return Ok(None);
            };
            if fanout::replace_outcome(fanout::version_of(&after), stamp).1 {
                fanout::fan_out_copies(cx, T::COLLECTION, &after, None, fanout::Reach::Copies).await?;
            }
            Ok(Some(after))
        })
    })
    .await
    .map_err(super::update_ways::no_transactions)?;
    let Some(after) = after else { return Ok(None) };
    let (created, changed) = fanout::replace_outcome(fanout::version_of(&after), stamp);
    if changed {
        fanout::after_commit(cx, T::COLLECTION, &after, None).await?;
    }
    Ok(Some(created))
}

/// The replace of a source, with its version (see [`replacement`]):
/// the image after the write, or `None` when a replace found nothing.
async fn write_image<T: Document>(
    cx: &mut Cx<'_>,
    raw: &Collection<RawDocumentBuf>,
    filter: BsonDoc,
    new: &BsonDoc,
    upsert: bool,
    plan: &DocumentPlan,
    stamp: i64,
) -> Result<Option<BsonDoc>> {
    let replacement = replacement::<T>(new, plan, stamp, created_by_upsert(&filter, upsert));
    find_and_replace::<T>(cx, raw, filter, replacement, upsert, ReturnDocument::After).await
}

/// The replace itself, one `findAndModify` with a `$replaceWith` pipeline,
/// returning the image `image` asks for (what is derived, and the version).
async fn find_and_replace<T: Document>(
    cx: &mut Cx<'_>,
    raw: &Collection<RawDocumentBuf>,
    filter: BsonDoc,
    replacement: BsonDoc,
    upsert: bool,
    image: ReturnDocument,
) -> Result<Option<BsonDoc>> {
    let projection = fanout::source_projection(cx.graph, T::COLLECTION);
    let found = in_session!(
        raw.find_one_and_update(filter, vec![doc! {"$replaceWith": replacement}])
            .upsert(upsert)
            .return_document(image)
            .optional(projection, |a, p| a.projection(p)),
        cx.session()
    )
    .map_err(|e| Error::driver("findAndModify", T::COLLECTION, e))?;
    found.map(|b| super::image::image("a replaced", T::COLLECTION, &b, None)).transpose()
}

/// A replace of a document that is no source of copies (a subset child, a
/// holder of copies or two-way references, a keeper of a subset): the
/// image before the write tells which summarized fields changed.
async fn replace_summarized<T: Document>(
    cx: &mut Cx<'_>,
    raw: &Collection<RawDocumentBuf>,
    filter: BsonDoc,
    new: BsonDoc,
    upsert: bool,
    mode: Mode,
    plan: &DocumentPlan,
) -> Result<Option<bool>> {
    let replacement = replacement::<T>(&new, plan, 0, created_by_upsert(&filter, upsert));
    let before = find_and_replace::<T>(cx, raw, filter, replacement, upsert, ReturnDocument::Before).await?;
    if before.is_none() && !upsert {
        return Ok(None);
    }
    let empty = BsonDoc::new();
    let old = before.as_ref().unwrap_or(&empty);
    let touched: Vec<String> = match cx.graph.derived_fields(T::COLLECTION) {
        Some(fields) => fields.iter().filter(|f| lookup(old, f) != lookup(&new, f)).map(|f| (*f).to_owned()).collect(),
        None => new.keys().filter(|k| old.get(*k) != new.get(*k)).cloned().collect(),
    };
    if !touched.is_empty() && mode != Mode::Deferred {
        let before = before.as_ref();
        crate::patterns::subset::after_change(cx, T::COLLECTION, before, &new, Some(&touched)).await?;
    }
    Ok(Some(before.is_none()))
}

/// For an upsert, the condition that is true of a document the write
/// creates: it holds only the fields of the filter's equalities (the `_id`
/// and the shard key), which no stored document of a type with fields of
/// its own does.
fn created_by_upsert(filter: &BsonDoc, upsert: bool) -> Option<BsonDoc> {
    let seeded = i64::try_from(filter.len()).unwrap_or(i64::MAX);
    upsert.then(|| doc! {"$lte": [{"$size": {"$objectToArray": "$$ROOT"}}, seeded]})
}

/// The document a replace writes: the caller's fields, what docrel keeps
/// taken from the stored document (two-way references, changed through
/// link/unlink/reassign, and subsets, kept from the children), and the
/// bookkeeping: the fill's copy records and the version of [`replace_version`].
///
/// [`replace_version`]: fanout::replace_version
///
/// What docrel keeps is the stored value even when the stored document
/// lacks the field (an `unlink` unset it): the caller's value would be a
/// reference the other side does not list. Only a document the upsert
/// creates (`created`, see [`created_by_upsert`]) takes the caller's
/// values, which the write then links.
fn replacement<T: Document>(new: &BsonDoc, plan: &DocumentPlan, stamp: i64, created: Option<BsonDoc>) -> BsonDoc {
    let g = plan.graph;
    let mut bookkeeping = vec![Bson::Document(doc! {"$ifNull": ["$_docrel", {}]})];
    if plan.fills {
        let copies = new.get_document("_docrel").ok().and_then(|d| d.get_document("copies").ok()).cloned();
        bookkeeping.push(doc! {"copies": {"$literal": copies.unwrap_or_default()}}.into());
    }
    let mut body = new.clone();
    body.remove("_docrel");
    if plan.source {
        bookkeeping.push(doc! {"v": fanout::replace_version(g.derived_fields(T::COLLECTION), &body, stamp)}.into());
    }
    let mut kept = BsonDoc::new();
    let fields = g.two_way_of(T::schema()).into_iter().map(|rel| rel.field);
    let moved = g.kept_by_moves(T::schema());
    let subsets = g.subsets_kept_by(T::schema()).into_iter().map(|subset| subset.rel.field);
    for field in fields.chain(subsets).chain(moved.iter().copied()) {
        let stored = Bson::String(format!("${field}"));
        let value = match (body.remove(field), &created) {
            (Some(theirs), Some(created)) => doc! {"$cond": [created.clone(), {"$literal": theirs}, stored]}.into(),
            _ => stored,
        };
        kept.insert(field, value);
    }
    let bookkeeping = if bookkeeping.len() == 1 {
        Bson::String("$_docrel".into())
    } else {
        doc! {"$mergeObjects": bookkeeping}.into()
    };
    doc! {"$mergeObjects": [{"$literal": body}, kept, {"_docrel": bookkeeping}]}
}
