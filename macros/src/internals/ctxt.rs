//! The errors of one derive. Parsing and checking report every mistake here
//! and go on, so a user sees all of them in one build; the derive then hands
//! them over with [`Ctxt::check`] and emits the fallback instead of the code.
//!
//! It is shared (`&Ctxt`) rather than threaded as `&mut`, so that a check
//! can report from inside a closure while other code holds the context too.

use darling::error::Accumulator;
use proc_macro2::Span;
use std::cell::RefCell;
use std::fmt::Display;

/// Collects the errors of one derive, in the order they are reported.
///
/// Dropping it without [`check`](Ctxt::check) panics (its darling
/// accumulator does): a derive that forgot its errors would emit code for a
/// struct it refused, and that is a bug of the derive, never a user's.
pub struct Ctxt {
    errors: RefCell<Accumulator>,
}

impl Ctxt {
    /// A context with no error yet.
    pub fn new() -> Self {
        Ctxt { errors: RefCell::new(darling::Error::accumulator()) }
    }

    /// Reports `message` at `span`, the tokens the user should change.
    pub fn error_at(&self, span: Span, message: impl Display) {
        self.push(error_at(span, message));
    }

    /// Reports an error built elsewhere (darling's, or a resolver's).
    pub fn push(&self, error: darling::Error) {
        self.errors.borrow_mut().push(error);
    }

    /// The value of `result`, or `None` after reporting its error.
    pub fn handle<T>(&self, result: darling::Result<T>) -> Option<T> {
        self.errors.borrow_mut().handle(result)
    }

    /// Every error reported, combined into one; `Ok` when there is none.
    pub fn check(self) -> darling::Result<()> {
        self.errors.into_inner().finish()
    }
}

/// An error at `span`, for code that returns it rather than reporting it
/// (a resolver whose caller decides).
pub fn error_at(span: Span, message: impl Display) -> darling::Error {
    darling::Error::custom(message).with_span(&span)
}

#[cfg(test)]
mod tests {
    use super::Ctxt;
    use proc_macro2::Span;

    #[test]
    fn every_error_is_handed_over_in_order() {
        let cx = Ctxt::new();
        cx.error_at(Span::call_site(), "first");
        assert_eq!(cx.handle(Ok::<_, darling::Error>(1)), Some(1));
        assert_eq!(cx.handle(Err::<(), _>(darling::Error::custom("second"))), None);
        let errors: Vec<String> = cx.check().unwrap_err().into_iter().map(|e| e.to_string()).collect();
        assert_eq!(errors, ["first", "second"]);
        assert!(Ctxt::new().check().is_ok());
    }

    #[test]
    #[should_panic(expected = "dropped without being finished")]
    fn a_context_dropped_unchecked_is_a_bug_of_the_derive() {
        let cx = Ctxt::new();
        cx.error_at(Span::call_site(), "forgotten");
    }
}
