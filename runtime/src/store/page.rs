//! Keyset paging: the documents of a filter read a page at a time in `_id`
//! order, each page starting after the last `_id` of the one before, so
//! memory and every `$in` built from a page stay bounded however many
//! match. Unlike `skip`, a page costs the same wherever it is, and a
//! document written between two pages neither shifts the others nor is
//! read twice.
//!
//! Pages are read on the primary: every pager of the runtime reads to
//! decide a write (an update or delete by page, an `on_delete` rule, a
//! repair).

use crate::error::Result;
use crate::store::session::{collect, plain, primary};
use mongodb::bson::{doc, Bson, Document as BsonDoc, RawDocument, RawDocumentBuf};
use mongodb::{ClientSession, Collection};

/// How many ids a page of a write holds (`docrel::relations::on_delete::BATCH`).
pub const ID_PAGE: usize = 1000;

/// `ids` a page of at most [`ID_PAGE`] at a time: what a write reads or
/// writes by a list of ids it was given (the documents of an `insert_many`,
/// the sources they refer to) goes in pages, so every `$in` stays bounded
/// however many documents one call writes.
pub(crate) fn id_pages<T>(ids: &[T]) -> std::slice::Chunks<'_, T> {
    pages(ids, ID_PAGE)
}

/// `ids` at most `size` at a time (at least one): [`id_pages`] for a read
/// whose caller chooses the size (a load's `chunk`).
pub(crate) fn pages<T>(ids: &[T], size: usize) -> std::slice::Chunks<'_, T> {
    ids.chunks(size.max(1))
}

/// The next page of at most [`ID_PAGE`] ids matching `filter`, after
/// `after` in `_id` order.
pub(crate) async fn id_page(
    raw: &Collection<RawDocumentBuf>,
    filter: &BsonDoc,
    after: Option<Bson>,
    session: Option<&mut ClientSession>,
) -> Result<Option<Vec<Bson>>> {
    Page { filter, after: after.as_ref(), size: ID_PAGE }.ids(raw, session).await
}

/// One page: at most `size` documents matching `filter` whose `_id` comes
/// after `after` (from the first one when `None`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Page<'a> {
    pub(crate) filter: &'a BsonDoc,
    pub(crate) after: Option<&'a Bson>,
    pub(crate) size: usize,
}

impl Page<'_> {
    /// The page's `_id`s in `coll`; `None` when it is empty (the scan is done).
    pub(crate) async fn ids<T: Send + Sync>(
        self,
        coll: &Collection<T>,
        session: Option<&mut ClientSession>,
    ) -> Result<Option<Vec<Bson>>> {
        let ids = self
            .read(coll, doc! {"_id": 1}, session, |raw| {
                Ok(raw.get("_id").ok().flatten().and_then(|id| Bson::try_from(id).ok()))
            })
            .await?;
        let page: Vec<Bson> = ids.into_iter().flatten().collect();
        Ok((!page.is_empty()).then_some(page))
    }

    /// The page's documents in `coll`, with the fields of `projection`.
    pub(crate) async fn docs<T: Send + Sync>(
        self,
        coll: &Collection<T>,
        projection: BsonDoc,
        session: Option<&mut ClientSession>,
    ) -> Result<Vec<BsonDoc>> {
        let collection = coll.name();
        self.read(coll, projection, session, |raw| plain(collection, raw)).await
    }

    async fn read<T: Send + Sync, U>(
        self,
        coll: &Collection<T>,
        projection: BsonDoc,
        session: Option<&mut ClientSession>,
        each: impl FnMut(&RawDocument) -> Result<U>,
    ) -> Result<Vec<U>> {
        let find = coll
            .find(after(self.filter, "_id", self.after))
            .projection(projection)
            .sort(doc! {"_id": 1})
            .limit(self.size as i64)
            .batch_size(self.size as u32)
            .selection_criteria(primary());
        collect(find, session, coll.name(), each).await
    }
}

/// `filter` narrowed to the documents whose `key` comes after `after`: the
/// condition of a keyset page (`_id` here; a bucket scan pages by parent).
///
/// "After" is the sort's order, which runs across BSON types (numbers,
/// then strings, objects, binary, ObjectIds, booleans, dates, ..), while
/// `$gt` compares within the type of its operand only: `{_id: {$gt: 7}}`
/// matches no string `_id`. So the condition is `$gt` within the type, or
/// any value of a type the sort puts later (`$type`, which indexes serve).
pub(crate) fn after(filter: &BsonDoc, key: &str, after: Option<&Bson>) -> BsonDoc {
    let Some(after) = after else { return filter.clone() };
    let later = later_types(after);
    let past = if later.is_empty() {
        doc! { key: {"$gt": after.clone()} }
    } else {
        doc! {"$or": [{ key: {"$gt": after.clone()} }, { key: {"$type": later} }]}
    };
    if filter.contains_key(key) || filter.contains_key("$or") {
        doc! {"$and": [filter.clone(), past]}
    } else {
        let mut narrowed = filter.clone();
        narrowed.extend(past);
        narrowed
    }
}

/// The BSON types the sort order puts after `value`'s type, as `$type`
/// codes: the brackets of MongoDB's comparison order from the one after
/// `value`'s (numbers of every width are one bracket, strings and symbols
/// another). Arrays, regexes and undefined are never an `_id`, but a
/// bucket's parent could be any value: every bracket is listed.
fn later_types(value: &Bson) -> Vec<i32> {
    const BRACKETS: &[&[i32]] = &[
        &[-1],            // MinKey
        &[6, 10],         // undefined, null
        &[1, 16, 18, 19], // double, int, long, decimal
        &[2, 14],         // string, symbol
        &[3],             // object
        &[4],             // array
        &[5],             // binary
        &[7],             // ObjectId
        &[8],             // boolean
        &[9],             // date
        &[17],            // timestamp
        &[11],            // regex
        &[127],           // MaxKey
    ];
    let code = value.element_type() as i32;
    let code = if code == 255 { -1 } else { code };
    let Some(at) = BRACKETS.iter().position(|b| b.contains(&code)) else { return Vec::new() };
    BRACKETS[at + 1..].iter().flat_map(|b| b.iter().copied()).collect()
}

#[cfg(test)]
mod tests {
    use super::{after, later_types};
    use mongodb::bson::{doc, Bson};

    #[test]
    fn a_page_starts_after_the_last_key_whatever_the_filter_says() {
        let filter = doc! {"owner": {"$in": [1, 2]}};
        assert_eq!(after(&filter, "_id", None), filter);
        let past_7 = doc! {"$or": [{"_id": {"$gt": 7}}, {"_id": {"$type": later_types(&7.into())}}]};
        let mut expected = filter.clone();
        expected.extend(past_7.clone());
        assert_eq!(after(&filter, "_id", Some(&7.into())), expected);
        // A filter on the key itself keeps its condition next to the page's.
        let on_id = doc! {"_id": {"$lt": 9}};
        assert_eq!(after(&on_id, "_id", Some(&7.into())), doc! {"$and": [{"_id": {"$lt": 9}}, past_7]});
        // Nothing sorts after MaxKey: the page's condition is `$gt` alone.
        assert_eq!(after(&doc! {}, "_id", Some(&Bson::MaxKey)), doc! {"_id": {"$gt": Bson::MaxKey}});
    }

    #[test]
    fn a_page_after_a_number_goes_on_to_strings_and_object_ids() {
        let later = later_types(&Bson::Int32(7));
        assert!(later.contains(&2) && later.contains(&7), "strings and ObjectIds sort after numbers: {later:?}");
        assert!(!later.contains(&16) && !later.contains(&1), "numbers are the same bracket: {later:?}");
        assert_eq!(later_types(&Bson::String("a".into()))[0], 3, "objects come right after strings");
        assert!(later_types(&Bson::ObjectId(mongodb::bson::oid::ObjectId::new())).starts_with(&[8, 9]));
    }
}
