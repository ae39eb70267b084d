//! Writes of whole documents (insert, replace, save): bounds and size
//! checked, copies filled from their sources, the write, then what the new
//! document owes the documents around it.

use super::hooks::{self, Write};
use super::repo::Repository;
use crate::bson_compat;
use crate::client::trace::Op;
use crate::denormalize::fanout;
use crate::denormalize::fill::{self, Sources};
use crate::denormalize::write::{replace_image, DocumentPlan};
use crate::error::{Error, Result};
use crate::id::{show, DocId};
use crate::patterns::subset;
use crate::schema::document::Document;
use crate::schema::graph::graph;
use crate::store::codec::encode;
use crate::store::session::{collect, in_session, Cx};
use crate::store::transaction;
use mongodb::bson::{self, doc, RawDocumentBuf};
use mongodb::ClientSession;
use std::collections::{HashMap, HashSet};

impl<T: Document> Repository<T> {
    /// Encodes documents for a write: bounds, copies filled from their
    /// sources (one read per source collection for the batch), a source's
    /// first version when `inserting`, size. When something is derived from
    /// or held by them the BSON documents come back too, so they are built once.
    async fn encode_all(&self, docs: &[T], inserting: bool, plan: &DocumentPlan, cx: &mut Cx<'_>) -> Result<Encoded> {
        for d in docs {
            d.check_bounds()?;
        }
        // An `Option` id that is `None` is made here, before anything is
        // filled or written, so that everything the insert owes knows it.
        let fresh: Vec<Option<T::Id>> =
            docs.iter().map(|d| if inserting && d.id().is_none() { T::generate_id() } else { None }).collect();
        let derived = plan.fills || plan.owes(inserting);
        if !derived && fresh.iter().all(Option::is_none) {
            let raws = docs.iter().map(|d| encode(T::COLLECTION, d)).collect::<Result<_>>()?;
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
        subset::check(T::COLLECTION, &plain)?;
        if plan.two_way {
            listed_once::<T>(&plain)?;
        }
        let raws = plain.iter().map(|d| encode(T::COLLECTION, d)).collect::<Result<_>>()?;
        Ok(Encoded { raws, plain: if derived { plain } else { Vec::new() }, filled })
    }

    /// What depends on documents just written (all of `written`): their
    /// copies confirmed, holders already referring to them filled, their
    /// summaries pushed into their parents' subsets. Returns whether that
    /// may have changed the written documents themselves (a copy refreshed
    /// on a race, a two-way side or a subset filled in, a copy of itself).
    pub(super) async fn after_insert(
        &self,
        written: &[bson::Document],
        around: Around,
        plan: &DocumentPlan,
        cx: &mut Cx<'_>,
    ) -> Result<bool> {
        if written.is_empty() {
            return Ok(false);
        }
        let mut changed = plan.changes_new();
        if let Around::Now(filled) = around {
            changed |= self.copies_around(written, filled, cx).await?;
        }
        self.after_new(written, cx).await?;
        if plan.summarized {
            // The summaries in the parents' subsets: one push per parent.
            subset::after_insert(cx, T::COLLECTION, written).await?;
        }
        Ok(changed)
    }

    pub(super) async fn insert_many_in(
        &self,
        docs: &[T],
        write: Write,
        session: Option<&mut ClientSession>,
    ) -> Result<()> {
        self.insert_in(docs, false, write, &mut Cx::new(&self.db, session)).await.map(|_| ())
    }

    /// Inserts `doc` and returns it as stored: decoded from what was
    /// written, copies filled (no round trip), or read back by `_id` when
    /// what the insert owed changed it after the write.
    pub(super) async fn insert_returning_in(&self, doc: &T, session: Option<&mut ClientSession>) -> Result<T> {
        let cx = &mut Cx::new(&self.db, session);
        let Some((written, changed)) = self.insert_in(std::slice::from_ref(doc), true, Write::Insert, cx).await? else {
            return Err(Error::Invalid { what: crate::error::Misuse::Insert, message: "nothing encoded".into() });
        };
        if changed {
            // By the id written: the caller's, or the one generated.
            let id = written.get("_id").ok().flatten().map(bson::Bson::try_from).transpose();
            let id = id.ok().flatten().unwrap_or(bson::Bson::Null);
            let find = crate::store::find::Find::<T, T>::new(self.raw.clone(), doc! {"_id": id.clone()});
            let mut found = find.all_in(cx.session()).await?;
            let id = crate::error::show_id(&id);
            return found.pop().ok_or(Error::NotFound { collection: T::COLLECTION, id });
        }
        let mut written = bson::Document::try_from(written.as_ref())
            .map_err(|e| Error::Encode { what: "a document".into(), message: e.to_string() })?;
        written.remove(crate::store::find::BOOKKEEPING);
        crate::store::codec::decode::<T>(T::COLLECTION, &encode(T::COLLECTION, &written)?)
    }

    /// The insert of `docs` and what it owes; with `keep`, the first
    /// document as written and whether something changed it since.
    async fn insert_in(
        &self,
        docs: &[T],
        keep: bool,
        write: Write,
        cx: &mut Cx<'_>,
    ) -> Result<Option<(RawDocumentBuf, bool)>> {
        let plan = DocumentPlan::of(T::schema());
        Op::new(if docs.len() == 1 { "insert" } else { "insert_many" }, T::COLLECTION)
            .documents(docs.len())
            .run(async move {
                if docs.is_empty() {
                    return Ok(None);
                }
                hooks::before_insert(docs, write)?;
                let encoded = self.encode_all(docs, true, &plan, cx).await?;
                // The ids as written (a generated one included), for the hooks.
                let ids: Vec<T::Id> =
                    encoded.raws.iter().filter_map(|r| r.get("_id").ok().flatten().and_then(T::Id::from_raw)).collect();
                let first = keep.then(|| encoded.raws.first().cloned()).flatten();
                // Several documents, or one whose links may be refused (the
                // other side full): all or nothing, where the deployment
                // has transactions.
                let changed = match docs.len() > 1 || plan.two_way {
                    true => match self.insert_in_transaction(encoded, plan, cx).await? {
                        Ok(changed) => changed,
                        Err(encoded) => self.insert_ordered(encoded, &plan, cx).await?,
                    },
                    false => self.insert_ordered(encoded, &plan, cx).await?,
                };
                hooks::after::<T>(cx, write, ids, docs.len() as u64).await;
                Ok(first.map(|raw| (raw, changed)))
            })
            .await
    }

    /// The insert and everything it owes the documents around it in one
    /// transaction (the caller's when its session is in one): whether it
    /// changed the documents after their write (see `after_insert`) once
    /// done, or the documents back when the server has no transactions.
    async fn insert_in_transaction(
        &self,
        encoded: Encoded,
        plan: DocumentPlan,
        cx: &mut Cx<'_>,
    ) -> Result<Result<bool, Encoded>> {
        if !cx.has_session() && transaction::standalone(cx.db) {
            return Ok(Err(encoded));
        }
        let (repo, db) = (self.clone(), cx.db.clone());
        let joined = match cx.session() {
            Some(s) => transaction::in_transaction(s).await,
            None => false,
        };
        // Shared by every attempt of the body, not copied for each.
        let shared = std::sync::Arc::new(encoded);
        let result = transaction::run_or_join(cx, "insert_many", &mut |session| {
            let (repo, db, encoded) = (repo.clone(), db.clone(), shared.clone());
            Box::pin(async move {
                let cx = &mut Cx::new(&db, Some(session));
                if plan.pushes_with_insert(joined) {
                    let confirmed = fill::insert_and_push(cx, T::schema(), &encoded.plain, encoded.filled.as_ref());
                    return Ok((plan.changes_new(), confirmed.await?));
                }
                let written = repo.write_new(encoded.raws.clone(), cx).await;
                written.map_err(repo.err("insert_many"))?;
                // A transaction of its own reads them once committed
                // ([`Self::after_commit`]), which sees all a read inside it would.
                let around = if joined { Around::Now(encoded.filled.clone()) } else { Around::AfterCommit };
                Ok((repo.after_insert(&encoded.plain, around, &plan, cx).await?, false))
            })
        })
        .await;
        match result {
            Ok((changed, _)) if joined => Ok(Ok(changed)),
            Ok((changed, confirmed)) => {
                // Pushes guarded by the versions the fill read confirmed the copies.
                let filled = if confirmed { None } else { shared.filled.clone() };
                Ok(Ok(changed | self.after_commit(&shared.plain, filled, cx).await?))
            }
            // Refused at its first write: nothing was written.
            Err(e) if transaction::unsupported(&e) => {
                transaction::remember_standalone(cx.db);
                Ok(Err(std::sync::Arc::unwrap_or_clone(shared)))
            }
            Err(e) => Err(e),
        }
    }

    /// What a committed insert transaction read again: the transaction read
    /// a snapshot, so a holder of these documents written by another client
    /// while it ran, or a source of their copies committed meanwhile, was in
    /// none of its reads, and that writer's own reads did not see these
    /// uncommitted documents either. Now that they are committed, one more
    /// read of each finds what the other missed (version guards make a copy
    /// written twice the same). Returns whether it changed the documents.
    async fn after_commit(&self, written: &[bson::Document], filled: Option<Sources>, cx: &mut Cx<'_>) -> Result<bool> {
        let changed = self.copies_around(written, filled, cx).await?;
        for rel in graph().two_way_of(T::schema()) {
            self.link_back(written, rel, cx).await?;
        }
        Ok(changed)
    }

    /// The copies around documents just written: theirs confirmed against
    /// their sources (when they were filled), and those of holders already
    /// referring to them filled. Returns whether their own copies changed.
    async fn copies_around(
        &self,
        written: &[bson::Document],
        filled: Option<Sources>,
        cx: &mut Cx<'_>,
    ) -> Result<bool> {
        let changed = match filled {
            Some(filled) => fill::confirm(cx, T::schema(), written, filled).await?,
            None => false,
        };
        crate::denormalize::fanout::fan_out_inserted(cx, T::COLLECTION, written).await?;
        Ok(changed)
    }

    /// An ordered insert, then what the documents it wrote owe: on a
    /// refused document the ones before it are written (with everything
    /// derived from them) and the rest are not. Returns what `after_insert` does.
    async fn insert_ordered(&self, encoded: Encoded, plan: &DocumentPlan, cx: &mut Cx<'_>) -> Result<bool> {
        let Encoded { raws, plain, filled } = encoded;
        let op = if raws.len() == 1 { "insert" } else { "insert_many" };
        match self.write_new(raws, cx).await.map_err(self.err(op)) {
            Ok(()) => self.after_insert(&plain, Around::Now(filled), plan, cx).await,
            Err(e) => {
                if !plain.is_empty() {
                    let landed = super::landed::landed(&self.raw, T::COLLECTION, &e, &plain, cx).await?;
                    self.after_insert(&plain[..landed], Around::Now(filled), plan, cx).await?;
                }
                Err(e)
            }
        }
    }

    /// The insert command itself: `insert_one` for one document.
    async fn write_new(&self, mut raws: Vec<RawDocumentBuf>, cx: &mut Cx<'_>) -> mongodb::error::Result<()> {
        match raws.len() {
            1 => in_session!(self.raw.insert_one(raws.remove(0)), cx.session()).map(|_| ()),
            _ => in_session!(self.raw.insert_many(raws), cx.session()).map(|_| ()),
        }
    }

    /// Replace or save: fill, write, confirm.
    async fn put(&self, doc: &T, upsert: bool, cx: &mut Cx<'_>) -> Result<bool> {
        let id = super::stored_id(doc, if upsert { "save" } else { "replace" })?.to_bson();
        let write = if upsert { Write::Save } else { Write::Replace };
        hooks::before_insert(std::slice::from_ref(doc), write)?;
        let plan = DocumentPlan::of(T::schema());
        let Encoded { mut raws, plain, filled } = self.encode_all(std::slice::from_ref(doc), upsert, &plan, cx).await?;
        let raw = raws
            .pop()
            .ok_or_else(|| Error::Invalid { what: crate::error::Misuse::Replace, message: "nothing encoded".into() })?;
        let new = plain_or(&plain, &raw)?;
        let filter = crate::schema::shard::key_filter(T::schema(), id.clone(), &new);
        let written = if !crate::schema::shard::movable(T::schema()) {
            self.put_once(filter, upsert, &new, &raw, &plan, cx).await?
        } else {
            // The filter pins the new shard key; the stored document may
            // carry another (the caller changed it). A write that creates
            // must not run before that is known: a sharded cluster would
            // store a second document with the same `_id` on another shard.
            match self.put_once(filter.clone(), false, &new, &raw, &plan, cx).await? {
                Some(done) => Some(done),
                None => match self.stored_key(&id, cx).await? {
                    Some(old) => self.put_once(old, false, &new, &raw, &plan, cx).await?,
                    None => self.put_once(filter, upsert, &new, &raw, &plan, cx).await?,
                },
            }
        };
        if written == Some(true) {
            self.after_new(std::slice::from_ref(&new), cx).await?;
        }
        let written = written.is_some();
        if written {
            if let Some(filled) = filled {
                fill::confirm(cx, T::schema(), &plain, filled).await?;
            }
            hooks::after::<T>(cx, write, vec![super::stored_id(doc, "save")?.clone()], 1).await;
        }
        Ok(written)
    }

    /// One replace (or upsert) of the document `filter` finds: whether it
    /// was created, or `None` when it found none.
    async fn put_once(
        &self,
        filter: bson::Document,
        upsert: bool,
        new: &bson::Document,
        raw: &RawDocumentBuf,
        plan: &DocumentPlan,
        cx: &mut Cx<'_>,
    ) -> Result<Option<bool>> {
        if plan.replaces_by_image() {
            return replace_image::<T>(cx, &self.raw, filter, new.clone(), upsert, self.mode(), plan).await;
        }
        let r = in_session!(self.raw.replace_one(filter, raw.clone()).upsert(upsert), cx.session())
            .map_err(self.err("replace"))?;
        Ok((r.matched_count > 0 || r.upserted_id.is_some()).then_some(r.upserted_id.is_some()))
    }

    /// The filter of the stored document `id` by its own shard key (which a
    /// replace moving it to another key must name), or `None` when there is
    /// no such document. Read by `_id` alone, from the primary.
    async fn stored_key(&self, id: &bson::Bson, cx: &mut Cx<'_>) -> Result<Option<bson::Document>> {
        let projection: bson::Document =
            T::schema().shard_key.iter().map(|f| ((*f).to_owned(), bson::Bson::Int32(1))).collect();
        let found = in_session!(
            self.raw
                .find_one(doc! {"_id": id.clone()})
                .projection(projection)
                .selection_criteria(crate::store::primary()),
            cx.session()
        )
        .map_err(self.err("find"))?;
        let Some(found) = found else { return Ok(None) };
        let stored = crate::store::session::plain(T::COLLECTION, &found)?;
        Ok(Some(crate::schema::shard::key_filter(T::schema(), id.clone(), &stored)))
    }

    /// What a new document of `T` owes the documents around it: the other
    /// side of its two-way references, and the subsets it keeps of children
    /// that already exist.
    async fn after_new(&self, docs: &[bson::Document], cx: &mut Cx<'_>) -> Result<()> {
        let g = graph();
        for rel in g.two_way_of(T::schema()) {
            for d in docs {
                let Some(x) = d.get("_id") else { continue };
                let targets: Vec<bson::Bson> = match d.get(rel.field) {
                    Some(bson::Bson::Array(ids)) => ids.clone(),
                    Some(bson::Bson::Null) | None => Vec::new(),
                    Some(id) => vec![id.clone()],
                };
                for y in targets {
                    let linked = crate::relations::two_way::link(cx, T::schema(), rel, x.clone(), y);
                    match linked.await {
                        // A reference to a document not there yet: it links back when it is inserted.
                        Err(Error::NotFound { collection, .. }) if Some(collection) == rel.target => {}
                        other => {
                            other?;
                        }
                    }
                }
            }
            self.link_back(docs, rel, cx).await?;
        }
        let ids: Vec<bson::Bson> = docs.iter().filter_map(|d| d.get("_id").cloned()).collect();
        for subset in g.subsets_kept_by(T::schema()) {
            let children = self.db.collection::<bson::Document>(subset.spec.child);
            for page in crate::store::page::id_pages(&ids) {
                let with_children = in_session!(
                    children
                        .distinct(subset.parent_field, doc! { subset.parent_field: {"$in": page} })
                        .selection_criteria(crate::store::primary()),
                    cx.session()
                )
                .map_err(|e| Error::driver("distinct", subset.spec.child, e))?;
                for parent in with_children {
                    subset.rebuild_in(cx, &parent).await?;
                }
            }
        }
        Ok(())
    }

    /// Links the new `docs` to the documents that already refer to them
    /// through the inverse of `rel`: those written while they did not exist
    /// (a task whose owner was inserted after it). One read per relation
    /// and page of new ids; each referring document is matched to the new
    /// ones it names by id, not against every new document. The single side
    /// of a 1:N pair is settled as it stands when linked
    /// (`two_way::link_back`): a new document naming another target keeps
    /// it, as the two-way repair would.
    async fn link_back(
        &self,
        docs: &[bson::Document],
        rel: &'static crate::schema::document::Relation,
        cx: &mut Cx<'_>,
    ) -> Result<()> {
        let (Some(other), Some(inverse)) = (rel.target, rel.inverse) else { return Ok(()) };
        let key = crate::store::path::id_key;
        // New id -> (the id, what it declares in `rel` already).
        let mut new: HashMap<String, (&bson::Bson, HashSet<String>)> = HashMap::new();
        for d in docs {
            let Some(x) = d.get("_id") else { continue };
            let declared = match d.get(rel.field) {
                Some(bson::Bson::Array(held)) => held.iter().map(key).collect(),
                Some(bson::Bson::Null) | None => HashSet::new(),
                Some(one) => HashSet::from([key(one)]),
            };
            new.insert(key(x), (x, declared));
        }
        let ids: Vec<bson::Bson> = new.values().map(|(x, _)| (*x).clone()).collect();
        let coll = cx.db.collection::<RawDocumentBuf>(other);
        // A document naming new ids of several pages is read once per page.
        let mut linked: HashSet<(String, String)> = HashSet::new();
        let single = crate::relations::two_way::single_of_one_to_many(rel);
        for page in crate::store::page::id_pages(&ids) {
            let find = coll
                .find(doc! { inverse: {"$in": page} })
                .projection(doc! {"_id": 1, inverse: 1})
                .selection_criteria(crate::store::primary());
            let referring = collect(find, cx.session(), other, |raw| crate::store::session::plain(other, raw)).await?;
            for holder in referring {
                let Some(y) = holder.get("_id") else { continue };
                let named: Vec<&bson::Bson> = match holder.get(inverse) {
                    Some(bson::Bson::Array(held)) => held.iter().collect(),
                    Some(one) => vec![one],
                    None => Vec::new(),
                };
                for x in named {
                    let Some((x, declared)) = new.get(&key(x)) else { continue };
                    if declared.contains(&key(y)) || !linked.insert((key(x), key(y))) {
                        continue;
                    }
                    let (x, y) = ((*x).clone(), y.clone());
                    match single {
                        true => crate::relations::two_way::link_back(cx, T::schema(), rel, x, y).await?,
                        false => crate::relations::two_way::link(cx, T::schema(), rel, x, y).await?,
                    };
                }
            }
        }
        Ok(())
    }

    pub(super) async fn replace_in(&self, doc: &T, session: Option<&mut ClientSession>) -> Result<()> {
        Op::new("replace", T::COLLECTION)
            .documents(1)
            .run(async move {
                match self.put(doc, false, &mut Cx::new(&self.db, session)).await? {
                    true => Ok(()),
                    false => {
                        Err(Error::NotFound { collection: T::COLLECTION, id: doc.id().map(show).unwrap_or_default() })
                    }
                }
            })
            .await
    }

    pub(super) async fn save_in(&self, doc: &T, session: Option<&mut ClientSession>) -> Result<()> {
        Op::new("save", T::COLLECTION)
            .documents(1)
            .run(async move { self.put(doc, true, &mut Cx::new(&self.db, session)).await.map(|_| ()) })
            .await
    }
}

/// Refuses a document that lists one document twice in an array of
/// two-way references: the other side refers back once, so the two could
/// never agree (I2). Nothing is written.
fn listed_once<T: Document>(docs: &[bson::Document]) -> Result<()> {
    for rel in graph().two_way_of(T::schema()) {
        for d in docs {
            let Some(bson::Bson::Array(ids)) = d.get(rel.field) else { continue };
            let mut seen = std::collections::HashSet::with_capacity(ids.len());
            if let Some(twice) = ids.iter().find(|id| !seen.insert(crate::store::path::id_key(id))) {
                return Err(Error::Invalid {
                    what: crate::error::Misuse::Insert,
                    message: format!(
                        "document {} of `{}` lists {} twice in `{}`, a two-way reference, whose other side \
                         refers back once; nothing was written. List each document once",
                        d.get("_id").map(crate::error::show_id).unwrap_or_default(),
                        T::COLLECTION,
                        crate::error::show_id(twice),
                        rel.field
                    ),
                });
            }
        }
    }
    Ok(())
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
fn plain_or(plain: &[bson::Document], raw: &RawDocumentBuf) -> Result<bson::Document> {
    match plain.first() {
        Some(p) => Ok(p.clone()),
        None => bson::Document::try_from(raw.as_ref())
            .map_err(|e| Error::Encode { what: "a document".into(), message: e.to_string() }),
    }
}

/// When an insert reads the copies around the documents it wrote (their
/// own confirmed against their sources, holders already referring to them
/// filled): now, with the sources its fill read, or once the transaction
/// it runs in has committed.
pub(super) enum Around {
    Now(Option<Sources>),
    AfterCommit,
}

/// Documents encoded for a write.
#[derive(Clone)]
struct Encoded {
    raws: Vec<RawDocumentBuf>,
    /// The same as BSON documents, when something is derived from or held by them.
    plain: Vec<bson::Document>,
    /// The sources their copies were filled from.
    filled: Option<Sources>,
}
