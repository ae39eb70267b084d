//! When a move may enter its next state: a pure function of the holders
//! (read on the server's clock) and the time since the current state began,
//! so it is tested on tables rather than on timing.

use super::holders::Holder;
use crate::schema::stored::MoveState;
use serde::Serialize;
use std::time::Duration;

/// What stands between a move and its next state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Wait {
    /// Nothing: enter it.
    Ready,
    /// These live holders have not seen the current state yet.
    Holders(Vec<String>),
    /// The current state is younger than this much more.
    Time(Duration),
}

/// Whether the move `id`, in `current` for `elapsed` (server time), may
/// enter the next state. Every live holder must have seen `current`: it
/// then writes both shapes as `current` requires. And `current` must be
/// two leases old: a process that confirmed the schema before the move
/// was published is registered nowhere, and its lease has lapsed only then.
pub fn may_enter(id: &str, current: MoveState, elapsed: Duration, holders: &[Holder], lease: Duration) -> Wait {
    let behind: Vec<String> = holders
        .iter()
        .filter(|h| h.live && h.seen.get(id).is_none_or(|seen| *seen < current))
        .map(|h| {
            format!(
                "{} (pid {} on {}, seen {})",
                h.program,
                h.pid,
                h.host,
                h.seen.get(id).map_or("nothing", |s| s.name())
            )
        })
        .collect();
    if !behind.is_empty() {
        return Wait::Holders(behind);
    }
    let needed = lease * 2;
    if elapsed < needed {
        return Wait::Time(needed - elapsed);
    }
    Wait::Ready
}

/// Whether the old shape of `from` (`posts.comments`) may be retired: no
/// holder that renewed within two leases links it. A process renews when
/// a write finds its lease lapsed, so a busy one's row is up to a lease
/// and a write old; a row older than two leases is a process that has
/// not written since (stopped, or idle: stop the old version first).
pub fn may_retire(from: &str, holders: &[Holder]) -> Wait {
    let linking: Vec<String> = holders
        .iter()
        .filter(|h| h.age_ms < h.lease_ms.saturating_mul(2) && h.old_shape.iter().any(|s| s == from))
        .map(|h| format!("{} (pid {} on {}) links `{from}`", h.program, h.pid, h.host))
        .collect();
    if linking.is_empty() {
        Wait::Ready
    } else {
        Wait::Holders(linking)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn holder(pid: i64, age_ms: i64, seen: Option<MoveState>, old: bool) -> Holder {
        Holder {
            process: format!("p{pid}"),
            host: "h".into(),
            pid,
            program: "app".into(),
            lease_ms: 1000,
            age_ms,
            live: age_ms < 1000,
            seen: seen.map(|s| BTreeMap::from([("m".to_owned(), s)])).unwrap_or_default(),
            old_shape: if old { vec!["posts.comments".into()] } else { Vec::new() },
            new_shape: Vec::new(),
        }
    }

    const LEASE: Duration = Duration::from_secs(1);

    #[test]
    fn every_live_holder_must_have_seen_the_current_state() {
        let seen =
            [holder(1, 10, Some(MoveState::Maintained), false), holder(2, 900, Some(MoveState::Announced), false)];
        assert_eq!(
            may_enter("m", MoveState::Maintained, Duration::from_secs(5), &seen, LEASE),
            Wait::Holders(vec!["app (pid 2 on h, seen announced)".into()])
        );
        // A holder that saw a later state, or whose lease lapsed, does not hold it back.
        let ok = [holder(1, 10, Some(MoveState::Moved), false), holder(2, 1500, Some(MoveState::Announced), false)];
        assert_eq!(may_enter("m", MoveState::Maintained, Duration::from_secs(5), &ok, LEASE), Wait::Ready);
        let unseen = [holder(3, 10, None, false)];
        assert!(matches!(
            may_enter("m", MoveState::Announced, Duration::from_secs(5), &unseen, LEASE),
            Wait::Holders(_)
        ));
    }

    #[test]
    fn a_state_younger_than_two_leases_waits_for_the_rest() {
        let none: [Holder; 0] = [];
        assert_eq!(
            may_enter("m", MoveState::Announced, Duration::from_millis(1500), &none, LEASE),
            Wait::Time(Duration::from_millis(500))
        );
        assert_eq!(may_enter("m", MoveState::Announced, Duration::from_secs(2), &none, LEASE), Wait::Ready);
    }

    #[test]
    fn retiring_waits_for_every_holder_of_the_old_shape_renewed_within_two_leases() {
        let hs = [holder(1, 10, None, true), holder(2, 5000, None, true), holder(3, 10, None, false)];
        assert_eq!(
            may_retire("posts.comments", &hs),
            Wait::Holders(vec!["app (pid 1 on h) links `posts.comments`".into()])
        );
        assert_eq!(may_retire("posts.comments", &hs[1..]), Wait::Ready);
        // Between its lease lapsing and its next write, a busy process
        // still counts.
        let between = [holder(4, 1500, None, true)];
        assert!(matches!(may_retire("posts.comments", &between), Wait::Holders(_)));
    }
}
