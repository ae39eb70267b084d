//! The event logging system of *6 Rules of Thumb*: log messages reference
//! their host (one-to-squillions), carry a copy of the host's IP address
//! (denormalizing into the "squillions" side), and each host keeps its last
//! 1000 messages (denormalizing into the "one" side, `$each`/`$sort`/`$slice`).
//!
//! ```text
//! hosts:  {_id, name, ipaddr, logmsgs: [{_id, time, message}]}    (the last 1000)
//! logmsg: {_id, time, message, ipaddr, host}
//! ```
//!
//! The text keeps `{time, message}` in the host; docrel's summaries carry
//! the message's `_id` too, by which a moved or re-sent message's summary
//! is found (a subset with no `key` must hold `_id`).
//!
//! Run: `MONGODB_URI=mongodb://... cargo run --example logging` (database
//! `DOCREL_DB`, default `docrel_logging`; dropped first, left in place).

use docrel::bson::{oid::ObjectId, DateTime};
use docrel::mongodb::Database;
use docrel::{Document, View};
use serde::{Deserialize, Serialize};

#[path = "common/mod.rs"]
pub mod common;

// ANCHOR: schema
#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "hosts")]
pub struct Host {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    #[document(unique)]
    pub ipaddr: String,
    /// The last 1000 messages, oldest first; the full set stays in `logmsg`.
    #[embed(max = 1000, subset_of = LogMsg, sort = "time", keep = last, allow_large)]
    pub logmsgs: Vec<LogLine>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[document(collection = "logmsg")]
pub struct LogMsg {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub time: DateTime,
    pub message: String,
    #[denormalize(from = Host::ipaddr, via = host)]
    pub ipaddr: String,
    #[parent_ref(to = Host, sort = "-time")]
    pub host: ObjectId,
}

/// A message as a host keeps it, and as a reader wants it.
#[derive(View, Serialize, Deserialize, Debug, Clone)]
#[view(of = LogMsg)]
pub struct LogLine {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub time: DateTime,
    pub message: String,
}
// ANCHOR_END: schema

/// Only the `_id` of a host travels (the text's `{_id: 1}` projection).
#[derive(View, Deserialize, Debug)]
#[view(of = Host)]
pub struct HostId {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

/// How many messages the scenario logs, and how many of them per insert.
pub const MESSAGES: usize = 5200;
pub const CHUNK: usize = 1300;

/// What the hosts say, in turn.
pub const TEXTS: [&str; 4] = ["cpu is on fire!", "disk is 93% full", "fan at 4200 rpm", "load average 7.12"];

/// 2014-03-28T09:42:41.382Z, the time of the reference text's message.
const START_MS: i64 = 1_395_999_761_382;

/// `2014-03-28T09:42:41.382Z`.
fn at(t: DateTime) -> String {
    t.try_to_rfc3339_string().unwrap_or_else(|_| t.to_string())
}

/// The ids the scenario created: goofy, mickey, pluto.
#[derive(Debug, Clone)]
pub struct Logging {
    pub hosts: Vec<ObjectId>,
}

/// Message `i` of the scenario: goofy's, but one in 50 is mickey's or pluto's.
fn message(i: usize, hosts: &[Host]) -> LogMsg {
    let host = match i % 100 {
        0 => &hosts[1],
        50 => &hosts[2],
        _ => &hosts[0],
    };
    LogMsg {
        id: ObjectId::new(),
        time: DateTime::from_millis(START_MS + i as i64 * 1000),
        message: format!("{} #{i}", TEXTS[i % TEXTS.len()]),
        ipaddr: String::new(), // filled from the host on insert
        host: host.id,
    }
}

pub async fn scenario(db: &Database, log: &common::Log) -> docrel::Result<Logging> {
    log.title("logging: log messages reference their host; hosts keep their last 1000 messages");
    log.step("create the indexes of hosts and logmsg", async {
        Host::repo(db).ensure_indexes().await?;
        LogMsg::repo(db).ensure_indexes().await
    })
    .await?;
    let hosts: Vec<Host> = [("goofy", "127.66.66.66"), ("mickey", "127.66.66.67"), ("pluto", "127.66.66.68")]
        .iter()
        .map(|(name, ip)| Host {
            id: ObjectId::new(),
            name: format!("{name}.example.com"),
            ipaddr: (*ip).into(),
            logmsgs: Vec::new(),
        })
        .collect();
    log.step("insert 3 hosts", Host::repo(db).insert_many(&hosts)).await?;

    let messages: Vec<LogMsg> = (0..MESSAGES).map(|i| message(i, &hosts)).collect();
    log.step(&format!("log {MESSAGES} messages, {CHUNK} per insert_many (ipaddr filled, subsets pushed)"), async {
        for chunk in messages.chunks(CHUNK) {
            LogMsg::repo(db).insert_many(chunk).await?;
        }
        Ok(())
    })
    .await?;

    let host = log
        .step(
            "find the host of 127.66.66.66, only its _id",
            Host::repo(db).find(Host::fields().ipaddr.eq("127.66.66.66")).view::<HostId>().one(),
        )
        .await?
        .ok_or_else(|| docrel::Error::NotFound { collection: "hosts", id: "{ipaddr: \"127.66.66.66\"}".into() })?;
    let last_5k: Vec<LogLine> = log
        .step(
            "the most recent 5000 messages of that host",
            LogMsg::rels().host.children_of(db, &host.id).limit(5000).to_vec(),
        )
        .await?;
    if let (Some(newest), Some(oldest)) = (last_5k.first(), last_5k.last()) {
        log.show(format!("{} messages, newest {:?} at {}", last_5k.len(), newest.message, at(newest.time)));
        log.show(format!("oldest of them {:?} at {}", oldest.message, at(oldest.time)));
    }

    let by_ip: Vec<LogLine> = log
        .step(
            "the 3 most recent messages from 127.66.66.67, by the copied ipaddr",
            LogMsg::repo(db)
                .find(LogMsg::fields().ipaddr.eq("127.66.66.67"))
                .sort(LogMsg::fields().time.desc())
                .limit(3)
                .view::<LogLine>()
                .to_vec(),
        )
        .await?;
    for line in &by_ip {
        log.show(format!("{} {}", at(line.time), line.message));
    }

    let ids: Vec<ObjectId> = hosts.iter().map(|h| h.id).collect();
    let latest = log
        .step(
            "the 2 latest messages of EACH host",
            LogMsg::rels().host.latest_per_parent(db, &ids, 2).load::<LogLine>(),
        )
        .await?;
    for (i, h) in hosts.iter().enumerate() {
        let lines: Vec<&str> = latest.of(i).map(|l| l.message.as_str()).collect();
        log.show(format!("{}: {lines:?}", h.name));
    }

    let goofy = log.step("read goofy's host document", Host::repo(db).require(&hosts[0].id)).await?;
    if let (Some(first), Some(last)) = (goofy.logmsgs.first(), goofy.logmsgs.last()) {
        log.show(format!(
            "it keeps {} messages, from {:?} to {:?}; logmsg holds all {}",
            goofy.logmsgs.len(),
            first.message,
            last.message,
            messages.iter().filter(|m| m.host == goofy.id).count()
        ));
    }

    log.step(
        "pluto moves to 127.66.66.99: its messages' ipaddr follow",
        Host::repo(db).update_by_id(&hosts[2].id, Host::fields().ipaddr.set("127.66.66.99".into())),
    )
    .await?;
    let moved = log
        .step(
            "count the messages from 127.66.66.99",
            LogMsg::repo(db).count(LogMsg::fields().ipaddr.eq("127.66.66.99")),
        )
        .await?;
    log.show(format!("{moved} messages"));
    Ok(Logging { hosts: ids })
}

#[tokio::main]
async fn main() {
    common::finish("logging", run().await);
}

async fn run() -> docrel::Result<()> {
    let (db, log) = common::open("logging").await?;
    scenario(&db, &log).await?;
    common::done(&db);
    Ok(())
}
