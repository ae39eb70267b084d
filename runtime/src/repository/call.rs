//! How a repository call runs: a read as it is; a write first holds the
//! database's stored schema (the rules other programs published are
//! followed from this process's first write on, never under a lapsed
//! lease), records the rules a caller's transaction followed, and keeps
//! every move its collection takes part in (`moved.rs`).

use super::repo::{Call, Operation};
use crate::error::Result;
use crate::schema::document::Document;
use futures::future::BoxFuture;
use std::future::IntoFuture;

impl<'a, T: Document, O: Operation<'a, T>> IntoFuture for Call<'a, T, O> {
    type Output = Result<O::Output>;
    type IntoFuture = BoxFuture<'a, Result<O::Output>>;

    fn into_future(self) -> Self::IntoFuture {
        if !O::WRITES {
            return self.op.run(self.repo, self.session);
        }
        // A write holds the database's stored schema first: the rules other
        // programs published are followed from this process's first write,
        // and never under a lapsed lease.
        Box::pin(async move {
            crate::schema::stored::hold(&self.repo.db).await?;
            let mut session = self.session;
            if let Some(s) = session.as_deref_mut() {
                super::caller_transaction::followed(s, &self.repo.db).await;
            }
            super::moved::run(self.repo, self.op, session).await
        })
    }
}
