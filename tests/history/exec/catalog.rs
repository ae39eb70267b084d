//! The catalog's operations: parts (sources of the copies in products,
//! holders of `productName`) and products.

use super::{outcome, Ctx, Sess, Within};
use crate::history::op::Op;
use crate::history::schema::*;
use crate::history::universe::*;
use docrel::bson::{doc, oid::ObjectId};
use docrel::{Filter, Update};

/// Runs `op` if it is a catalog operation.
pub async fn run(c: &Ctx, op: &Op, mut s: Sess<'_>) -> Option<docrel::Result<String>> {
    if let Some(r) = parts(c, op, s.as_deref_mut()).await {
        return Some(r);
    }
    products(c, op, s).await
}

async fn part_by_id(c: &Ctx, p: usize, txn: bool, u: Update<Part>, s: Sess<'_>) -> docrel::Result<String> {
    c.repo::<Part>(txn).update_by_id(&Universe::part(p), u).within(s).await.map(outcome)
}

async fn product_by_id(c: &Ctx, r: usize, txn: bool, u: Update<Product>, s: Sess<'_>) -> docrel::Result<String> {
    c.repo::<Product>(txn).update_by_id(&Universe::product(r), u).within(s).await.map(outcome)
}

/// A part's filter by id.
fn ids(ps: &[usize]) -> Filter {
    let ids: Vec<ObjectId> = ps.iter().map(|p| Universe::part(*p)).collect();
    Part::fields().id.is_in(&ids)
}

/// The parts of product `r`.
fn of_product(r: usize) -> Filter {
    Part::fields().product.eq(Universe::product(r))
}

async fn parts(c: &Ctx, op: &Op, mut s: Sess<'_>) -> Option<docrel::Result<String>> {
    let f = Part::fields();
    Some(match op {
        Op::RenamePart { p, name, txn } => part_by_id(c, *p, *txn, f.name.set(name.clone()), s).await,
        Op::MovePart { p, product, txn } => {
            part_by_id(c, *p, *txn, f.product.set(Universe::product(*product)), s).await
        }
        Op::IncPartQty { p, by, txn } => part_by_id(c, *p, *txn, f.qty.inc(*by), s).await,
        Op::BoundPartQty { p, qty, max } => {
            part_by_id(c, *p, false, if *max { f.qty.set_max(*qty) } else { f.qty.set_min(*qty) }, s).await
        }
        Op::LabelPart { p, label } => {
            part_by_id(c, *p, false, f.label.set(Some(label.clone())).and(f.qty.set_on_insert(0)), s).await
        }
        Op::UnlabelPart { p } => part_by_id(c, *p, false, f.label.unset(), s).await,
        Op::RawUpdatePart { p, label, by } => {
            part_by_id(c, *p, false, Update::raw(doc! {"$set": {"label": label}, "$inc": {"qty": by}}), s).await
        }
        Op::RawRenamePart { r } => {
            // Only a part whose label is a string: `$rename` of a null would
            // store a name that is no string.
            let filter = of_product(*r).and(Filter::new(doc! {"label": {"$type": "string"}}));
            let u = Update::raw(doc! {"$rename": {"label": "name"}});
            c.repo::<Part>(false).update_one(filter, u).within(s).await.map(outcome)
        }
        Op::RenamePartWhere { r, name, txn } => {
            let u = f.name.set(name.clone());
            c.repo::<Part>(*txn).update_one(of_product(*r), u).within(s).await.map(outcome)
        }
        Op::RenamePartsMany { ps, name, txn } => {
            c.repo::<Part>(*txn).update_many(ids(ps), f.name.set(name.clone())).within(s).await.map(outcome)
        }
        Op::MovePartsMany { ps, product, txn } => {
            let u = f.product.set(Universe::product(*product));
            c.repo::<Part>(*txn).update_many(ids(ps), u).within(s).await.map(outcome)
        }
        Op::ReplacePart { p, name, product, txn } | Op::SavePart { p, name, product, txn } => {
            let part = part_doc(*p, name, *product);
            let repo = c.repo::<Part>(*txn);
            match op {
                Op::ReplacePart { .. } => repo.replace(&part).within(s.as_deref_mut()).await,
                _ => repo.save(&part).within(s.as_deref_mut()).await,
            }
            .map(|()| String::new())
        }
        Op::SetPartCopy { p, name } => {
            let u = f.product_name.set(name.clone());
            c.repo::<Part>(false).update_by_id(&Universe::part(*p), u).within(s).await.map(outcome)
        }
        Op::InsertPart { p, name, product } => {
            c.repo::<Part>(false).insert(&part_doc(*p, name, *product)).within(s).await.map(|()| String::new())
        }
        Op::UpsertPart { p, name, product, txn } => {
            let new = f.product.set_on_insert(Universe::product(*product)).and(f.qty.set_on_insert(1));
            let u = f.name.set(name.clone()).and(new).and(f.product_name.set_on_insert(STALE.into()));
            let repo = c.repo::<Part>(*txn);
            let o = repo.upsert(f.id.eq(Universe::part(*p)), u).within(s).await;
            o.map(|o| format!("matched {} upserted {}", o.matched, o.upserted_id.is_some()))
        }
        Op::InsertPartReturning { p, name, product } => {
            let part = part_doc(*p, name, *product);
            let stored = c.repo::<Part>(false).insert(&part).returning().within(s).await;
            stored.map(|stored| format!("productName {:?}", stored.product_name))
        }
        Op::InsertManyParts { parts } => {
            let docs: Vec<Part> = parts.iter().map(|(p, name, r)| part_doc(*p, name, *r)).collect();
            c.repo::<Part>(false).insert_many(&docs).within(s).await.map(|()| String::new())
        }
        Op::DeletePart { p } => {
            c.repo::<Part>(false).delete_by_id(&Universe::part(*p)).within(s).await.map(|d| format!("deleted {d}"))
        }
        Op::DeletePartWhere { r } => {
            c.repo::<Part>(false).delete_one(of_product(*r)).within(s).await.map(|d| format!("deleted {d}"))
        }
        Op::DeleteManyParts { ps } => {
            c.repo::<Part>(false).delete_many(ids(ps)).within(s).await.map(|d| format!("deleted {d}"))
        }
        _ => return None,
    })
}

async fn products(c: &Ctx, op: &Op, s: Sess<'_>) -> Option<docrel::Result<String>> {
    let f = Product::fields();
    Some(match op {
        Op::RenameProduct { r, name, txn } => product_by_id(c, *r, *txn, f.name.set(name.clone()), s).await,
        Op::RenameProductsMany { rs, name, txn } => {
            let ids: Vec<ObjectId> = rs.iter().map(|r| Universe::product(*r)).collect();
            let u = f.name.set(name.clone());
            c.repo::<Product>(*txn).update_many(f.id.is_in(&ids), u).within(s).await.map(outcome)
        }
        Op::ReplaceProduct { r, name, parts, txn } | Op::SaveProduct { r, name, parts, txn } => {
            let product = Product { id: Universe::product(*r), name: name.clone(), parts: part_refs(parts) };
            let repo = c.repo::<Product>(*txn);
            match op {
                Op::ReplaceProduct { .. } => repo.replace(&product).within(s).await,
                _ => repo.save(&product).within(s).await,
            }
            .map(|()| String::new())
        }
        Op::InsertProduct { r, name, parts } => {
            let product = Product { id: Universe::product(*r), name: name.clone(), parts: part_refs(parts) };
            c.repo::<Product>(false).insert(&product).within(s).await.map(|()| String::new())
        }
        Op::PushPartRef { r, p, txn } => product_by_id(c, *r, *txn, f.parts.push(part_refs(&[*p])), s).await,
        Op::AddPartRef { r, p } => product_by_id(c, *r, false, f.parts.add_to_set(part_refs(&[*p])), s).await,
        Op::PullPartRef { r, p } => pull_as_read(c, *r, *p, false, s).await,
        Op::PullAllPartRefs { r, p } => pull_as_read(c, *r, *p, true, s).await,
        Op::PullWherePartRef { r, p } => {
            let part = Universe::part(*p);
            product_by_id(c, *r, false, f.parts.pull_where(|e| e.at::<ObjectId>("id").eq(part)), s).await
        }
        Op::SetPartRefs { r, parts } => product_by_id(c, *r, false, f.parts.set(part_refs(parts)), s).await,
        Op::DeleteProduct { r } => c
            .repo::<Product>(false)
            .delete_by_id(&Universe::product(*r))
            .within(s)
            .await
            .map(|d| format!("deleted {d}")),
        _ => return None,
    })
}

/// Reads product `r`, then pulls the elements of part `p` as read: the
/// first (`pull`) or all (`pull_all`).
async fn pull_as_read(c: &Ctx, r: usize, p: usize, all: bool, mut s: Sess<'_>) -> docrel::Result<String> {
    let f = Product::fields();
    let read = c.repo::<Product>(false).get(&Universe::product(r)).within(s.as_deref_mut()).await?;
    let Some(product) = read else { return Ok("no such product".into()) };
    let elements: Vec<PartRef> = product.parts.into_iter().filter(|e| e.id == Universe::part(p)).collect();
    let Some(first) = elements.first() else { return Ok("not listed".into()) };
    let u = if all { f.parts.pull_all(&elements) } else { f.parts.pull(first) };
    let o = product_by_id(c, r, false, u, s).await?;
    Ok(format!("pulled {} as read: {o}", if all { elements.len() } else { 1 }))
}
