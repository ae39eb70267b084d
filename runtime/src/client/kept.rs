//! What docrel keeps in a process for one deployment, and for one database
//! of it: the schema graph a database's published rules make, its lease,
//! the open bucket pages, what the server said it supports.
//!
//! Each concern declares its own state type next to the code that uses it
//! and asks for it with [`of_database`] or [`of_client`]; this module only
//! knows where a `Database` or `Client` belongs. Two databases of one
//! process, or a same-named database on two clusters, never share what is
//! kept.
//!
//! The driver's `Client` carries no state of ours and no public identity,
//! but every clone of one client shares its options: the address of the
//! client's selection criteria is that client's identity for as long as it
//! lives. [`crate::connect`] makes sure the client has one (the driver's
//! own default, primary, said explicitly) and forgets whatever an earlier,
//! dropped client at the same address left. A client built without docrel
//! and without a read preference has no identity: its databases are kept
//! by name, shared with every other such client of the process.

use mongodb::{Client, Database};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The state of one place, by the type each concern keeps there.
#[derive(Default)]
struct Parts(Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl Parts {
    fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut parts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let part = parts.entry(TypeId::of::<T>()).or_insert_with(|| Arc::new(T::default()));
        // The entry under `TypeId::of::<T>()` was made as a `T` just above.
        Arc::clone(part).downcast::<T>().unwrap_or_else(|_| Arc::new(T::default()))
    }
}

/// One deployment's state: its own, and each of its databases'.
#[derive(Default)]
struct Deployment {
    own: Arc<Parts>,
    databases: HashMap<String, Arc<Parts>>,
}

fn deployments() -> &'static Mutex<HashMap<usize, Deployment>> {
    static ALL: std::sync::OnceLock<Mutex<HashMap<usize, Deployment>>> = std::sync::OnceLock::new();
    ALL.get_or_init(Default::default)
}

/// The identity of `client` (shared by its clones), 0 when it has none.
fn identity(client: &Client) -> usize {
    client.selection_criteria().map_or(0, |c| c as *const _ as usize)
}

/// The `T` kept for `db`: made with `T::default()` the first time.
pub(crate) fn of_database<T: Default + Send + Sync + 'static>(db: &Database) -> Arc<T> {
    let parts = {
        let mut all = deployments().lock().unwrap_or_else(PoisonError::into_inner);
        let deployment = all.entry(identity(db.client())).or_default();
        match deployment.databases.get(db.name()) {
            Some(parts) => Arc::clone(parts),
            None => Arc::clone(deployment.databases.entry(db.name().to_owned()).or_default()),
        }
    };
    parts.get()
}

/// The `T` kept for the deployment `client` talks to.
pub(crate) fn of_client<T: Default + Send + Sync + 'static>(client: &Client) -> Arc<T> {
    let parts = {
        let mut all = deployments().lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(&all.entry(identity(client)).or_default().own)
    };
    parts.get()
}

/// Gives a new client an identity and forgets what a dropped client at the
/// same identity left.
pub(crate) fn prepare(options: &mut mongodb::options::ClientOptions) {
    options.selection_criteria.get_or_insert(mongodb::options::ReadPreference::Primary.into());
}

/// Forgets what was kept for `client`'s identity: called when a client is
/// made, so nothing of a dropped client at the same address is inherited.
pub(crate) fn forget(client: &Client) {
    let id = identity(client);
    if id != 0 {
        deployments().lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::options::ClientOptions;

    fn client() -> Client {
        let mut options = ClientOptions::builder().hosts(vec!["localhost:1".parse().unwrap()]).build();
        prepare(&mut options);
        let client = Client::with_options(options).unwrap();
        forget(&client);
        client
    }

    #[derive(Default)]
    struct Count(std::sync::atomic::AtomicU32);

    #[tokio::test]
    async fn each_database_of_each_client_keeps_its_own() {
        let (a, b) = (client(), client());
        let bump = |db: &Database| of_database::<Count>(db).0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(bump(&a.database("shop")), 0);
        // A clone of the client, another handle of the database: the same place.
        assert_eq!(bump(&a.clone().database("shop")), 1);
        // Another database, or the same name on another client: a place of its own.
        assert_eq!(bump(&a.database("blog")), 0);
        assert_eq!(bump(&b.database("shop")), 0);
        assert_eq!(of_client::<Count>(&a).0.fetch_add(1, std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(of_client::<Count>(&a.clone()).0.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(of_client::<Count>(&b).0.load(std::sync::atomic::Ordering::SeqCst), 0);
    }
}
