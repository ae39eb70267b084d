//! The operations on items and their reviews (the subset `items.reviews`)
//! and on posts and their comment pages (the bucket).

use super::{outcome, Ctx, Sess, Within};
use crate::history::op::Op;
use crate::history::schema::*;
use crate::history::universe::*;
use docrel::bson::{oid::ObjectId, DateTime};
use docrel::{repository::Repository, Filter, Update};

/// Runs `op` if it is an operation on items, reviews, posts or comments.
pub async fn run(c: &Ctx, op: &Op, mut s: Sess<'_>) -> Option<docrel::Result<String>> {
    if let Some(r) = reviews(c, op, s.as_deref_mut()).await {
        return Some(r);
    }
    if let Some(r) = items(c, op, s.as_deref_mut()).await {
        return Some(r);
    }
    posts(c, op, s).await
}

async fn review_by_id(c: &Ctx, v: usize, txn: bool, u: Update<Review>, s: Sess<'_>) -> docrel::Result<String> {
    c.repo::<Review>(txn).update_by_id(&Universe::review(v), u).within(s).await.map(outcome)
}

fn ids(vs: &[usize]) -> Filter {
    let ids: Vec<ObjectId> = vs.iter().map(|v| Universe::review(*v)).collect();
    Review::fields().id.is_in(&ids)
}

/// The reviews of item `i`.
fn of_item(i: usize) -> Filter {
    Review::fields().product_id.eq(Universe::item(i))
}

async fn reviews(c: &Ctx, op: &Op, s: Sess<'_>) -> Option<docrel::Result<String>> {
    let f = Review::fields();
    let repo = c.repo::<Review>(false);
    let written = |r: docrel::Result<()>| r.map(|()| String::new());
    let deleted = |r: docrel::Result<bool>| r.map(|d| format!("deleted {d}"));
    Some(match op {
        Op::InsertReview { v, i, text, date } => written(repo.insert(&review_doc(*v, *i, text, *date)).within(s).await),
        Op::InsertManyReviews { reviews } => {
            let docs: Vec<Review> = reviews.iter().map(|(v, i, t, d)| review_doc(*v, *i, t, *d)).collect();
            written(repo.insert_many(&docs).within(s).await)
        }
        Op::EditReviewText { v, text, txn } => review_by_id(c, *v, *txn, f.text.set(text.clone()), s).await,
        Op::EditReviewWhere { i, text } => {
            repo.update_one(of_item(*i), f.text.set(text.clone())).within(s).await.map(outcome)
        }
        Op::EditReviewsMany { vs, text, txn } => {
            c.repo::<Review>(*txn).update_many(ids(vs), f.text.set(text.clone())).within(s).await.map(outcome)
        }
        Op::EditReviewDate { v, date } => {
            review_by_id(c, *v, false, f.published_date.set(DateTime::from_millis(*date)), s).await
        }
        Op::ReviewNow { v } => review_by_id(c, *v, false, f.published_date.current_date(), s).await,
        Op::MoveReview { v, i } => review_by_id(c, *v, false, f.product_id.set(Universe::item(*i)), s).await,
        Op::MoveReviewsMany { vs, i, txn } => {
            let u = f.product_id.set(Universe::item(*i));
            c.repo::<Review>(*txn).update_many(ids(vs), u).within(s).await.map(outcome)
        }
        Op::ReplaceReview { v, i, text, date } => {
            written(repo.replace(&review_doc(*v, *i, text, *date)).within(s).await)
        }
        Op::SaveReview { v, i, text, date } => written(repo.save(&review_doc(*v, *i, text, *date)).within(s).await),
        Op::DeleteReview { v } => deleted(repo.delete_by_id(&Universe::review(*v)).within(s).await),
        Op::DeleteReviewWhere { i } => deleted(repo.delete_one(of_item(*i)).within(s).await),
        Op::DeleteReviewDoc { v } => delete_as_read(&repo, *v, s).await,
        Op::DeleteManyReviews { vs } => repo.delete_many(ids(vs)).within(s).await.map(|d| format!("deleted {d}")),
        _ => return None,
    })
}

/// Reads review `v`, then deletes it as read (`delete(&doc)`).
async fn delete_as_read(repo: &Repository<Review>, v: usize, mut s: Sess<'_>) -> docrel::Result<String> {
    let Some(review) = repo.get(&Universe::review(v)).within(s.as_deref_mut()).await? else {
        return Ok("no such review".into());
    };
    let deleted = repo.delete(&review).within(s).await?;
    Ok(format!("deleted {deleted} (item as read I{})", review.product_id))
}

async fn items(c: &Ctx, op: &Op, s: Sess<'_>) -> Option<docrel::Result<String>> {
    let repo = c.repo::<Item>(false);
    Some(match op {
        Op::InsertItem { i, name } => {
            let item = Item { id: Universe::item(*i), name: name.clone(), reviews: vec![], newest: vec![] };
            repo.insert(&item).within(s).await.map(|()| String::new())
        }
        Op::ReplaceItem { i, name } => rewrite_item(&repo, *i, name, false, s).await,
        Op::SaveItem { i, name } => rewrite_item(&repo, *i, name, true, s).await,
        Op::DeleteItem { i } => repo.delete_by_id(&Universe::item(*i)).within(s).await.map(|d| format!("deleted {d}")),
        Op::PullSummary { i, v } => {
            let rid = Universe::rid(*v);
            let u = Item::fields().reviews.pull_where(|e| e.at::<i32>("rid").eq(rid));
            repo.update_by_id(&Universe::item(*i), u).within(s).await.map(outcome)
        }
        Op::RebuildSubset { i } => {
            Item::rels().reviews.rebuild(&c.db, &Universe::item(*i)).await.map(|n| format!("holds {n}"))
        }
        _ => return None,
    })
}

/// Reads item `i`, then replaces or saves it with a new name (its subset as read).
async fn rewrite_item(
    repo: &Repository<Item>,
    i: usize,
    name: &str,
    save: bool,
    mut s: Sess<'_>,
) -> docrel::Result<String> {
    let Some(item) = repo.get(&Universe::item(i)).within(s.as_deref_mut()).await? else {
        return Ok("no such item".into());
    };
    let item = Item { name: name.to_owned(), ..item };
    if save {
        repo.save(&item).within(s).await?;
    } else {
        repo.replace(&item).within(s).await?;
    }
    let rids: Vec<i32> = item.reviews.iter().map(|r| r.review_id).collect();
    Ok(format!("subset as read {rids:?}"))
}

async fn posts(c: &Ctx, op: &Op, s: Sess<'_>) -> Option<docrel::Result<String>> {
    let repo = c.repo::<Post>(false);
    Some(match op {
        Op::InsertPost { b } => {
            let post = Post { id: Universe::post(*b), title: format!("post {b}") };
            repo.insert(&post).within(s).await.map(|()| String::new())
        }
        Op::DeletePost { b } => repo.delete_by_id(&Universe::post(*b)).within(s).await.map(|d| format!("deleted {d}")),
        Op::AppendComment { b, text } => {
            let comment = Comment { name: "reader".into(), text: text.clone() };
            let a = CommentPage::rels().comments.append(&c.db, &Universe::post(*b), &comment).await;
            a.map(|a| format!("page {:?}", a.page.unwrap_or_default()))
        }
        Op::AppendComments { comments } => {
            let batch: Vec<(i32, Comment)> = comments
                .iter()
                .map(|(b, text)| (Universe::post(*b), Comment { name: "reader".into(), text: text.clone() }))
                .collect();
            let a = CommentPage::rels().comments.append_many(&c.db, &batch).await;
            a.map(|a| format!("pages {:?}", a.iter().map(|p| p.page.unwrap_or_default()).collect::<Vec<_>>()))
        }
        Op::BumpPageCount { b } => {
            let f = CommentPage::fields();
            let u = f.count.inc(1);
            c.repo::<CommentPage>(false)
                .update_many(f.blog_entry_id.eq(Universe::post(*b)), u)
                .within(s)
                .await
                .map(outcome)
        }
        _ => return None,
    })
}
