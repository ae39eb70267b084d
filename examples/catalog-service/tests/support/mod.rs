//! The service started for one test, on a loopback port against the test's
//! own database, and a small HTTP client to call it.

use docrel::testing::TestDb;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::net::SocketAddr;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

// ANCHOR: service
/// The service running in the test's runtime, as `main` runs it.
pub struct Service {
    pub addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Service {
    /// Prepares the test's database as `main` does, then serves on
    /// 127.0.0.1:0, a port the system picks, so tests run in parallel.
    pub async fn start(t: &TestDb) -> Service {
        catalog_service::prepare(&t.db).await.expect("creating the indexes");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let addr = listener.local_addr().expect("the port bound");
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let task = tokio::spawn(catalog_service::serve(listener, t.db.clone(), shutdown));
        Service { addr, stop, task }
    }

    /// One request with an optional JSON body: the status and the JSON
    /// answered (`Null` for an empty body).
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let stream = TcpStream::connect(self.addr).await.expect("connecting to the service");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("HTTP/1");
        tokio::spawn(conn);
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string())
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(bytes)))
            .expect("a request");
        let response = sender.send_request(request).await.expect("an answer");
        let status = response.status();
        let body = response.into_body().collect().await.expect("the body").to_bytes();
        let json = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {body:?}"))
        };
        (status, json)
    }

    /// Shuts the service down as Ctrl-C does, and waits until it has stopped.
    pub async fn stop(self) -> std::io::Result<()> {
        let _ = self.stop.send(());
        self.task.await.expect("the server task")
    }
}
// ANCHOR_END: service
