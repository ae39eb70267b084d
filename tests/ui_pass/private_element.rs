//! A library's public document with a private field whose element type is
//! crate-private builds, as it does with serde alone: generated items
//! never widen what the user's types expose (issue 38): a field's handles
//! are as visible as the field.
#![deny(warnings)]

pub mod shop {
    use docrel::bson::oid::ObjectId;
    use serde::{Deserialize, Serialize};

    #[derive(docrel::Document, Serialize, Deserialize)]
    #[document(collection = "orders")]
    pub struct Order {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[embed(max = 50)]
        lines: Vec<Line>,
    }

    #[derive(Serialize, Deserialize)]
    struct Line {
        sku: String,
        qty: i32,
    }

    impl Order {
        pub fn new() -> Self {
            Order { id: ObjectId::new(), lines: vec![Line { sku: "a".into(), qty: 1 }] }
        }

        pub fn quantities(&self) -> Vec<(String, i32)> {
            self.lines.iter().map(|l| (l.sku.clone(), l.qty)).collect()
        }
    }
}

fn main() {
    let order = shop::Order::new();
    assert_eq!(order.quantities(), [("a".to_owned(), 1)]);
}
