//! Moves between patterns (`#[document(moved_from = Post::comments)]`):
//! planned from the attributes and counted on the live data. `schema diff`
//! shows each plan; `schema apply` refuses a program that declares a move,
//! since running one online is not built yet.

mod copy;
mod count;
mod plan;
mod shapes;

pub use copy::Estimate;
pub use count::MoveCounts;
pub(crate) use plan::plan_with;
pub use plan::{plan, undeclared, MovePlan};
