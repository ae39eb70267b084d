//! What docrel keeps in a process for one deployment, and for one database
//! of it: the schema graph a database's published rules make, its lease,
//! the open bucket pages, what the server said it supports.
//!
//! Each concern declares its own state type next to the code that uses it
//! and asks for it with [`of_database`] or [`of_client`]; this module only
//! knows where a `Database` or `Client` belongs. Two databases of one
//! process, or a same-named database on two clusters, never share what is
//! kept; every client of one deployment shares it (their writes hold one
//! lease and follow one graph).
//!
//! The driver's `Client` carries no state of ours and no public identity,
//! but every clone of one client shares its options: the address of the
//! client's selection criteria names that client while it lives.
//! [`crate::connect`] makes sure the client has one (the driver's own
//! default, primary, said explicitly) and registers it with the deployment
//! it connected to, named by its hosts. A client built without docrel
//! belongs to no known deployment: its databases are kept by name, shared
//! with every other such client of the process.

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

/// The deployments, by the hosts a client connected to ("" for clients
/// built without docrel), and which deployment each client talks to.
#[derive(Default)]
struct Places {
    clients: HashMap<usize, String>,
    deployments: HashMap<String, Deployment>,
}

impl Places {
    fn deployment(&mut self, client: &Client) -> &mut Deployment {
        let hosts = self.clients.get(&identity(client)).cloned().unwrap_or_default();
        self.deployments.entry(hosts).or_default()
    }
}

fn places() -> &'static Mutex<Places> {
    static ALL: std::sync::OnceLock<Mutex<Places>> = std::sync::OnceLock::new();
    ALL.get_or_init(Default::default)
}

/// The identity of `client` (shared by its clones), 0 when it has none.
fn identity(client: &Client) -> usize {
    client.selection_criteria().map_or(0, |c| c as *const _ as usize)
}

/// The `T` kept for `db`: made with `T::default()` the first time.
pub(crate) fn of_database<T: Default + Send + Sync + 'static>(db: &Database) -> Arc<T> {
    let parts = {
        let mut all = places().lock().unwrap_or_else(PoisonError::into_inner);
        let deployment = all.deployment(db.client());
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
        let mut all = places().lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(&all.deployment(client).own)
    };
    parts.get()
}

/// Gives a client about to be made an identity (see the module's doc).
pub(crate) fn prepare(options: &mut mongodb::options::ClientOptions) {
    options.selection_criteria.get_or_insert(mongodb::options::ReadPreference::Primary.into());
}

/// Records that `client` talks to the deployment at `hosts`: what is kept
/// for that deployment is now `client`'s too. A dropped client's address
/// taken by a new one is registered again, so it never inherits a place.
pub(crate) fn register(client: &Client, hosts: String) {
    let id = identity(client);
    if id != 0 {
        places().lock().unwrap_or_else(PoisonError::into_inner).clients.insert(id, hosts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::options::ClientOptions;

    fn client(hosts: &str) -> Client {
        let mut options = ClientOptions::builder().hosts(vec![hosts.parse().unwrap()]).build();
        prepare(&mut options);
        let client = Client::with_options(options).unwrap();
        register(&client, hosts.to_owned());
        client
    }

    #[derive(Default)]
    struct Count(std::sync::atomic::AtomicU32);

    #[tokio::test]
    async fn each_database_of_each_deployment_keeps_its_own() {
        let (a, b, again) = (client("kept-a:1"), client("kept-b:1"), client("kept-a:1"));
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
        // Another client of the same deployment: the same places.
        assert_eq!(bump(&again.database("shop")), 2);
        assert_eq!(of_client::<Count>(&again).0.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
