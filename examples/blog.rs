//! The blog of *The Little MongoDB Schema Design Book*, One-To-Many with
//! bucketing: a post's comments are kept in buckets of at most 50, so a
//! page of comments is one read and the post never grows.
//!
//! ```text
//! posts:    {_id: 1, title, url, text}
//! comments: {_id, blog_entry_id, page, count, comments: [{name, created_on, comment}]}
//! ```
//!
//! Run: `MONGODB_URI=mongodb://... cargo run --example blog` (database
//! `DOCREL_DB`, default `docrel_blog`; dropped first, left in place).

use docrel::bson::{oid::ObjectId, DateTime};
use docrel::mongodb::Database;
use docrel::Document;
use serde::{Deserialize, Serialize};

#[path = "common/mod.rs"]
pub mod common;

// ANCHOR: schema
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "posts")]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: i32,
    pub title: String,
    pub url: String,
    pub text: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Comment {
    pub name: String,
    pub created_on: DateTime,
    pub comment: String,
}

/// One bucket: up to 50 comments of one post.
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "comments")]
pub struct CommentPage {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[parent_ref(to = Post)]
    pub blog_entry_id: i32,
    pub page: i32,
    pub count: i32,
    #[bucket(size = 50)]
    pub comments: Vec<Comment>,
}
// ANCHOR_END: schema

/// How many comments the scenario appends.
pub const COMMENTS: usize = 60;

/// What the scenario read back.
#[derive(Debug, Clone)]
pub struct Blog {
    /// `(page, count)` of the latest page.
    pub latest: Option<(i32, i32)>,
    /// Every comment, in order.
    pub total: usize,
}

/// 2014-01-01T10:01:22Z, Peter Critic's comment in the text.
const FIRST_MS: i64 = 1_388_570_482_000;

fn comment(i: usize) -> Comment {
    let (name, text) = match i {
        0 => ("Peter Critic".to_owned(), "Awesome blog post".to_owned()),
        1 => ("John Page".to_owned(), "Not so awesome blog".to_owned()),
        _ => (format!("Reader {}", i % 7), format!("Comment number {}", i + 1)),
    };
    Comment { name, created_on: DateTime::from_millis(FIRST_MS + i as i64 * 3_600_000), comment: text }
}

pub async fn scenario(db: &Database, log: &common::Log) -> docrel::Result<Blog> {
    log.title("blog: comments in buckets of 50 per post");
    log.step("create the unique index {blog_entry_id, page} of comments", CommentPage::repo(db).ensure_indexes())
        .await?;
    let post = Post {
        id: 1,
        title: "An awesome blog".into(),
        url: "http://awesomeblog.com".into(),
        text: "This is an awesome blog we have just started".into(),
    };
    log.step("insert the post", Post::repo(db).insert(&post)).await?;

    let comments = CommentPage::rels().comments;
    log.step(&format!("append {COMMENTS} comments, one at a time"), async {
        for i in 0..COMMENTS {
            comments.append(db, &post.id, &comment(i)).await?;
        }
        Ok(())
    })
    .await?;

    let first = log.step("read page 1", comments.page(db, &post.id, 1)).await?;
    if let Some(p) = &first {
        log.show(format!("page {}: {} comments", p.page, p.count));
        for c in p.comments.iter().take(2) {
            log.show(format!("  {}: {:?}", c.name, c.comment));
        }
    }
    let latest = log.step("read the latest page", comments.latest(db, &post.id)).await?;
    if let Some(p) = &latest {
        log.show(format!("page {}: {} comments", p.page, p.count));
        if let Some(c) = p.comments.last() {
            log.show(format!("  the last, by {}: {:?}", c.name, c.comment));
        }
    }
    let all = log.step("read every comment of the post", comments.all(db, &post.id)).await?;
    log.show(format!("{} comments", all.len()));
    Ok(Blog { latest: latest.map(|p| (p.page, p.count)), total: all.len() })
}

#[tokio::main]
async fn main() {
    common::finish("blog", run().await);
}

async fn run() -> docrel::Result<()> {
    let (db, log) = common::open("blog").await?;
    scenario(&db, &log).await?;
    common::done(&db);
    Ok(())
}
