//! The state every history starts from.

use super::plan;
use super::schema::*;
use super::universe::*;
use docrel::mongodb::Database;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// How setup populates the universe.
pub const SETUP_PARTS: usize = 8;
pub const SETUP_PRODUCTS: usize = 4;
pub const SETUP_PEOPLE: usize = 3;
pub const SETUP_TASKS: usize = 6;
pub const SETUP_REVIEWS: usize = 8;
pub const SETUP_COMMENTS: [usize; 2] = [4, 2];

/// The state every history starts from, written through docrel (inline,
/// no faults); the comments it appended.
pub async fn setup(db: &Database, seed: u64) -> docrel::Result<Vec<(i32, String)>> {
    Part::repo(db).ensure_indexes().await?;
    Product::repo(db).ensure_indexes().await?;
    Person::repo(db).ensure_indexes().await?;
    Task::repo(db).ensure_indexes().await?;
    Item::repo(db).ensure_indexes().await?;
    Review::repo(db).ensure_indexes().await?;
    Post::repo(db).ensure_indexes().await?;
    CommentPage::repo(db).ensure_indexes().await?;
    catalog(db).await?;
    people(db).await?;
    reviews(db, seed).await?;
    comments(db).await
}

/// Products listing parts (part 0 in all of them), half the parts labelled.
async fn catalog(db: &Database) -> docrel::Result<()> {
    let products: Vec<Product> = (0..SETUP_PRODUCTS)
        .map(|r| Product { id: Universe::product(r), name: format!("r-s.{r}"), parts: vec![] })
        .chain([Product { id: Universe::sentinel_product(), name: "sentinel".into(), parts: vec![] }])
        .collect();
    Product::repo(db).insert_many(&products).await?;
    // Half the parts labelled, so that `$unset` and `$rename` find some.
    let parts: Vec<Part> = (0..SETUP_PARTS)
        .map(|p| Part {
            qty: p as i32,
            label: (p % 2 == 0).then(|| format!("l-s.{p}")),
            ..part_doc(p, &format!("p-s.{p}"), p % SETUP_PRODUCTS)
        })
        .chain([Part {
            id: Universe::sentinel_part(),
            product: Universe::sentinel_product(),
            ..part_doc(0, "sentinel", 0)
        }])
        .collect();
    Part::repo(db).insert_many(&parts).await?;
    for r in 0..SETUP_PRODUCTS {
        // Part 0 is shared by every product: a rename of it fans out widely.
        let list = [0, (r + 1) % SETUP_PARTS, (r + SETUP_PRODUCTS) % SETUP_PARTS];
        Product::repo(db)
            .replace(&Product { id: Universe::product(r), name: format!("r-s.{r}"), parts: part_refs(&list) })
            .await?;
    }

    Ok(())
}

/// People and their tasks, both sides of the two-way reference written by
/// the inserts themselves; the tasks' notes, their copies stale for the
/// insert to fill.
async fn people(db: &Database) -> docrel::Result<()> {
    // Link and reassign are exercised by the histories.
    let owner = |t: usize| t % SETUP_PEOPLE;
    let people: Vec<Person> = (0..SETUP_PEOPLE)
        .map(|h| Person {
            id: Universe::person(h),
            name: format!("h-s.{h}"),
            tasks: (0..SETUP_TASKS).filter(|t| owner(*t) == h).map(Universe::task).collect(),
        })
        .collect();
    Person::repo(db).insert_many(&people).await?;
    // Notes by others than the owner (two on even tasks), so that a rename
    // of a person fans out into tasks they do not own.
    let noted = |t: usize| {
        let by: Vec<usize> = (1..=1 + usize::from(t.is_multiple_of(2))).map(|k| (t + k) % SETUP_PEOPLE).collect();
        notes(&by, &format!("n-s.{t}"))
    };
    let tasks: Vec<Task> = (0..SETUP_TASKS)
        .map(|t| Task {
            id: Universe::task(t),
            description: format!("t-s.{t}"),
            owner: Some(Universe::person(owner(t))),
            owner_name: STALE.into(),
            notes: noted(t),
        })
        .collect();
    Task::repo(db).insert_many(&tasks).await?;
    Ok(())
}

/// Items and their reviews, dated by the seed.
async fn reviews(db: &Database, seed: u64) -> docrel::Result<()> {
    let items: Vec<Item> = (0..plan::ITEMS)
        .map(|i| Item { id: Universe::item(i), name: format!("i-s.{i}"), reviews: vec![], newest: vec![] })
        .collect();
    Item::repo(db).insert_many(&items).await?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5e7u64);
    let reviews: Vec<Review> = (0..SETUP_REVIEWS)
        .map(|v| {
            let date = plan::unique_date(&mut rng, plan::MAX_WORKERS, v, 0);
            review_doc(v, v % plan::ITEMS, &format!("v-s.{v}"), date)
        })
        .collect();
    Review::repo(db).insert_many(&reviews).await?;
    Ok(())
}

/// Posts and their comments; the comments appended.
async fn comments(db: &Database) -> docrel::Result<Vec<(i32, String)>> {
    let posts: Vec<Post> =
        (0..plan::POSTS).map(|b| Post { id: Universe::post(b), title: format!("post {b}") }).collect();
    Post::repo(db).insert_many(&posts).await?;
    let mut appended = Vec::new();
    for (b, n) in SETUP_COMMENTS.iter().enumerate() {
        for k in 0..*n {
            let text = format!("c-s.{b}.{k}");
            CommentPage::rels()
                .comments
                .append(db, &Universe::post(b), &Comment { name: "reader".into(), text: text.clone() })
                .await?;
            appended.push((Universe::post(b), text));
        }
    }
    Ok(appended)
}
