//! Moves between patterns (`#[document(moved_from = Post::comments)]`):
//! planned from the attributes and counted on the live data (`schema
//! diff`), their states and the processes holding the schema lease
//! (`schema status`), run online to `switched` (`schema apply`, [`run`]),
//! and their old shapes retired (`schema retire`, [`retire`]); two-way
//! arrays made one-way the same way ([`make_one_way`]).

mod back;
mod copy;
mod copy_run;
mod count;
mod holders;
mod indexes;
mod move_plan;
mod one_way;
mod paged;
mod plan;
mod progress;
mod retire;
mod run;
mod shapes;
mod states;
mod status;

pub use copy::Estimate;
pub(crate) use count::first;
pub use count::MoveCounts;
pub use holders::{holders, Holder};
pub use one_way::make_one_way;
pub(crate) use plan::plan_with;
pub use plan::{plan, undeclared, MovePlan};
pub use progress::{Copied, Step};
pub use retire::{retire, RetireReport};
pub use run::{run, run_offline, MoveReport};
pub use states::{may_enter, may_retire, Wait};
pub use status::{status, MoveStatus, Status};
