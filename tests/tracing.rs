//! Observability: a `tracing` subscriber sees one `docrel` span per
//! operation, whose `round_trips` equal the commands the client sent for
//! it (counted independently by the test's command monitor), with fan-out
//! targets and their modified counts as events inside it, and nothing at
//! INFO or above when everything succeeds. A user's own command event
//! handler keeps receiving every event.

use docrel::bson::{doc, oid::ObjectId};
use docrel::testing::TestDb;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "suppliers")]
struct Supplier {
    #[serde(rename = "_id")]
    id: i32,
    name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: ObjectId,
    name: String,
    #[reference(to = Supplier)]
    supplier: i32,
    #[denormalize(from = Supplier::name, via = supplier)]
    supplier_name: String,
}

#[derive(View, Serialize, Deserialize, Debug)]
#[view(of = Supplier)]
struct SupplierName {
    name: String,
}

/// A closed span: its name, its parent's id, and its fields.
#[derive(Debug, Clone, Default)]
struct Closed {
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
    /// Events recorded inside it.
    events: Vec<Recorded>,
}

/// An event: its level and fields.
type Recorded = (Level, BTreeMap<String, String>);

#[derive(Default, Clone)]
struct Seen {
    closed: Arc<Mutex<Vec<Closed>>>,
    /// Every event, wherever it was.
    events: Arc<Mutex<Vec<Recorded>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}").trim_matches('"').to_owned());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Seen {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut closed = Closed { parent: ctx.current_span().id().map(Id::into_u64), ..Closed::default() };
        if let Some(parent) = attrs.parent() {
            closed.parent = Some(parent.into_u64());
        }
        attrs.record(&mut Fields(&mut closed.fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(closed);
        }
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(closed) = span.extensions_mut().get_mut::<Closed>() {
                values.record(&mut Fields(&mut closed.fields));
            }
        }
    }
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push((*event.metadata().level(), fields.clone()));
        if let Some(span) = ctx.event_span(event) {
            if let Some(closed) = span.extensions_mut().get_mut::<Closed>() {
                closed.events.push((*event.metadata().level(), fields));
            }
        }
    }
    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            if let Some(closed) = span.extensions_mut().remove::<Closed>() {
                self.closed.lock().unwrap().push(closed);
            }
        }
    }
}

impl Seen {
    /// The spans closed since the last call, top-level ones only.
    fn take(&self) -> Vec<Closed> {
        let all = std::mem::take(&mut *self.closed.lock().unwrap());
        all.into_iter().filter(|c| c.parent.is_none()).collect()
    }
}

fn field<'a>(c: &'a Closed, name: &str) -> &'a str {
    c.fields.get(name).map(String::as_str).unwrap_or_else(|| panic!("span without `{name}`: {c:?}"))
}

#[tokio::test]
async fn every_operation_is_one_span_with_its_round_trips() -> docrel::Result<()> {
    let seen = Seen::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(seen.clone()));
    let t = TestDb::new("tracing_spans").await?;
    let db = &t.db;

    // Each step: run one operation, then compare the span it left with the
    // commands the test's own monitor counted for it.
    macro_rules! step {
        ($op:expr, $collection:expr, $call:expr) => {{
            let mark = t.trips.mark();
            let out = $call;
            let sent = t.trips.since(mark);
            let spans = seen.take();
            assert_eq!(spans.len(), 1, "one span for {}: {spans:#?}", $op);
            let span = spans.into_iter().next().unwrap();
            assert_eq!(field(&span, "op"), $op, "{span:?}");
            assert_eq!(field(&span, "collection"), $collection, "{span:?}");
            assert_eq!(field(&span, "round_trips"), sent.to_string(), "{}: {span:?}", $op);
            assert!(sent > 0, "{} sent nothing", $op);
            assert!(field(&span, "elapsed_us").parse::<u64>().is_ok(), "{span:?}");
            (out, span)
        }};
    }

    let (r, _) =
        step!("insert", "suppliers", Supplier::repo(db).insert(&Supplier { id: 7, name: "Acme".into() }).await);
    r?;
    let parts: Vec<Part> = (0..3)
        .map(|i| Part { id: ObjectId::new(), name: format!("p{i}"), supplier: 7, supplier_name: String::new() })
        .collect();
    // A batch: the copies are filled from the supplier first (a read), then one insert.
    let (r, span) = step!("insert_many", "parts", Part::repo(db).insert_many(&parts).await);
    r?;
    assert_eq!(field(&span, "documents"), "3");

    let (found, span) = step!("find", "parts", Part::repo(db).find(Part::fields().supplier.eq(7)).await);
    assert_eq!(found?.len(), 3);
    assert_eq!(field(&span, "documents"), "3");

    // A rename fans out: the span holds an event naming the target and the copies it rewrote.
    let (r, span) = step!(
        "update_by_id",
        "suppliers",
        Supplier::repo(db).update_by_id(&7, Supplier::fields().name.set("Acme Corp".into())).await
    );
    r?;
    let fanned: Vec<_> =
        span.events.iter().filter(|(_, f)| f.get("message").map(String::as_str) == Some("fan-out")).collect();
    assert_eq!(fanned.len(), 1, "{span:?}");
    assert_eq!(fanned[0].1.get("collection").map(String::as_str), Some("parts"));
    assert_eq!(fanned[0].1.get("modified").map(String::as_str), Some("3"));
    let stored = db
        .collection::<docrel::bson::Document>("parts")
        .count_documents(doc! {"supplier_name": "Acme Corp"})
        .await
        .unwrap();
    assert_eq!(stored, 3, "the copies the event reports are stored");

    let parts = Part::repo(db).find(Part::fields().supplier.eq(7)).await?;
    seen.take();
    let (loaded, span) = step!("load", "suppliers", Part::rels().supplier.load::<SupplierName>(db, &parts).await);
    assert_eq!(loaded?.one(0).map(|s| s.name.as_str()), Some("Acme Corp"));
    assert_eq!(field(&span, "round_trips"), "1");

    let (deleted, span) =
        step!("delete_many", "parts", Part::repo(db).delete_many(Part::fields().supplier.eq(7)).await);
    assert_eq!(deleted?, 3);
    assert_eq!(field(&span, "documents"), "3");

    // A failing operation: the span names the error's kind.
    let (r, span) =
        step!("insert", "suppliers", Supplier::repo(db).insert(&Supplier { id: 7, name: "again".into() }).await);
    assert!(r.is_err());
    assert_eq!(field(&span, "error"), "Driver");

    // Nothing above DEBUG came from the successful operations (and the failed insert is the caller's to log).
    let loud: Vec<_> = seen.events.lock().unwrap().iter().filter(|(l, _)| *l <= Level::INFO).cloned().collect();
    assert!(loud.is_empty(), "docrel logged at INFO or above: {loud:?}");
    Ok(())
}

#[tokio::test]
async fn a_users_own_command_monitor_keeps_its_events() -> docrel::Result<()> {
    // A subscriber here too: tracing caches whether a callsite is wanted
    // across threads, and a test thread without one beside a thread with
    // one can leave the other's spans unrecorded.
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(Seen::default()));
    let uri = std::env::var("MONGODB_URI").expect("MONGODB_URI: run through scripts/test");
    // `docrel::client::options` already counts round trips for the spans.
    let mut options = docrel::client::options(&uri).await?;
    let mine = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = mine.clone();
    options.command_event_handler = Some(docrel::mongodb::event::EventHandler::callback(move |e| {
        if let docrel::mongodb::event::command::CommandEvent::Started(s) = e {
            log.lock().unwrap().push(s.command_name.clone());
        }
    }));
    // A round-trip counter installed after it goes in front of it, not instead of it.
    let trips = docrel::client::RoundTrips::new();
    trips.install(&mut options);
    let client = docrel::connect_with(&uri, options).await?;
    let db = client.database(&format!("t_tracing_monitor_{}", std::process::id()));
    // The first write to a database reads its stored schema: read it here.
    docrel::schema::obey(&db).await?;
    let before = mine.lock().unwrap().len();
    let mark = trips.mark();
    Supplier::repo(&db).insert(&Supplier { id: 1, name: "x".into() }).await?;
    let names: Vec<String> = mine.lock().unwrap()[before..].to_vec();
    let counted: Vec<String> =
        trips.commands_since(mark).iter().map(|c| c.split(' ').next().unwrap_or("").to_owned()).collect();
    assert_eq!(names.first().map(String::as_str), Some("insert"), "the user's handler saw the insert: {names:?}");
    assert_eq!(names, counted, "the user's handler and the counter saw the same commands");
    db.drop().await.map_err(|e| docrel::Error::driver("dropDatabase", db.name(), e))?;
    Ok(())
}

#[tokio::test]
async fn a_driver_error_reads_without_a_hex_dump_and_says_it_is_transient() -> docrel::Result<()> {
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(Seen::default()));
    let t = TestDb::new("tracing_errors").await?;
    // The error the history checker's fault injection meets: a primary
    // shutting down, labelled retryable by the server.
    t.client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["count", "aggregate"], "errorCode": 91, "appName": t.db.name()},
        })
        .await
        .expect("the embedded server runs with --enable-test-commands");
    let err = Supplier::repo(&t.db).count(Supplier::fields().id.eq(1)).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, docrel::Error::Driver { operation: "count", .. }), "{text}");
    assert!(!text.contains("RawDocumentBuf") && !text.contains("74000000"), "no raw reply dumped: {text}");
    assert!(text.contains("ShutdownInProgress") && text.contains("91"), "the server's code and name stay: {text}");
    assert!(err.is_transient(), "{text}");
    assert!(text.contains("transient"), "says so: {text}");
    assert!(!format!("{err:?}").contains("RawDocumentBuf"), "nor in Debug: {err:?}");
    // A plain refusal is not transient (on a fresh client: this one waits
    // for its server to come back from the "shutdown").
    let t = TestDb::new("tracing_errors_dup").await?;
    Supplier::repo(&t.db).insert(&Supplier { id: 1, name: "a".into() }).await?;
    let dup = Supplier::repo(&t.db).insert(&Supplier { id: 1, name: "b".into() }).await.unwrap_err();
    assert!(!dup.is_transient() && !dup.to_string().contains("transient"), "{dup}");
    Ok(())
}
