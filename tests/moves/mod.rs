//! The two versions of a blog the moves' tests play: the old one embeds
//! comments in their post; the new one keeps them in a collection of their
//! own with a parent reference, and the post keeps the newest three.

/// The old version's module path, for `docrel::testing::link_only`.
#[allow(dead_code)]
pub const V1: &str = concat!(module_path!(), "::v1");
/// The new version's.
#[allow(dead_code)]
pub const V2: &str = concat!(module_path!(), "::v2");

/// The old version: comments embedded in their post.
pub mod v1 {
    use docrel::bson::oid::ObjectId;
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct Comment {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub author: String,
        pub text: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mv_posts")]
    pub struct Post {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub title: String,
        #[embed(max = 50)]
        pub comments: Vec<Comment>,
    }
}

/// The new version: comments are documents of their own, with a parent
/// reference, and the post keeps the newest three.
pub mod v2 {
    use docrel::bson::oid::ObjectId;
    use docrel::Document;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mv_comments", moved_from = Post::comments)]
    pub struct Comment {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[parent_ref(to = Post, sort = "-_id", on_delete = cascade)]
        pub post: ObjectId,
        pub author: String,
        pub text: String,
    }

    #[derive(docrel::View, Serialize, Deserialize, Debug, Clone)]
    #[view(of = Comment)]
    pub struct Line {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub text: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[document(collection = "mv_posts")]
    pub struct Post {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub title: String,
        #[embed(max = 3, subset_of = Comment, sort = "-_id")]
        pub recent: Vec<Line>,
    }
}

/// The move from the old version to the new, as the change running it
/// publishes it (a process of either version reads it from the database).
#[allow(dead_code)]
pub fn active(state: docrel::schema::stored::MoveState) -> docrel::schema::stored::ActiveMove {
    use docrel::schema::stored::{ActiveMove, MoveEnd, StoredMove};
    let spec = StoredMove {
        id: "mv-posts-comments".into(),
        kind: docrel::schema::moves::MoveKind::EmbedToCollection,
        from: MoveEnd { collection: "mv_posts".into(), rust_type: "Post".into(), rust_field: Some("comments".into()) },
        to: MoveEnd { collection: "mv_comments".into(), rust_type: "Comment".into(), rust_field: None },
        parent_field: "post".into(),
        key: "_id".into(),
        buckets: None,
    };
    ActiveMove {
        spec,
        field: "comments".into(),
        bound: Some(50),
        old: Default::default(),
        required: false,
        state,
        since: docrel::bson::DateTime::now(),
        change: "test".into(),
    }
}
