//! A scripted HTTP server on 127.0.0.1 that records every request.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use serde_json::Value;
use url::Url;

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Recorded {
    /// Returns a header as text, if present.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().expect("ascii header").to_owned())
    }

    /// Returns a string field of the JSON body.
    pub fn field(&self, name: &str) -> String {
        self.body[name].as_str().unwrap_or_default().to_owned()
    }
}

/// What the server answers.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Duration,
}

impl Reply {
    /// A JSON answer.
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: vec![("content-type", "application/json".to_owned())],
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    /// A raw answer.
    pub fn text(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
            delay: Duration::ZERO,
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }

    /// Answers only after `delay`.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

type Responder = dyn Fn(usize, &Recorded) -> Reply + Send + Sync;

struct Shared {
    responder: Box<Responder>,
    requests: Mutex<Vec<Recorded>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// A running fake server.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FakeServer {
    /// Starts a server answering request number `n` (from 0) with `responder(n, &request)`.
    pub async fn start(
        responder: impl Fn(usize, &Recorded) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let shared = Arc::new(Shared {
            responder: Box::new(responder),
            requests: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("local addr");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { addr, shared }
    }

    /// Returns `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> Url {
        Url::parse(&format!("http://{}{path}", self.addr)).expect("url")
    }

    /// Returns the requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("lock").clone()
    }

    /// Returns the number of requests received so far.
    pub fn calls(&self) -> usize {
        self.shared.requests.lock().expect("lock").len()
    }

    /// Returns the most requests that were being answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }
}

/// Returns a URL on 127.0.0.1 where nothing listens.
pub async fn closed_port_url(path: &str) -> Url {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("local addr");
    drop(listener);
    Url::parse(&format!("http://{addr}{path}")).expect("url")
}

struct InFlight<'a>(&'a Shared);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let _guard = InFlight(&shared);
    let recorded = Recorded {
        path: uri.path().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let reply = {
        let mut requests = shared.requests.lock().expect("lock");
        let n = requests.len();
        requests.push(recorded.clone());
        n
    };
    let reply = (shared.responder)(reply, &recorded);
    tokio::time::sleep(reply.delay).await;
    let mut response =
        Response::builder().status(StatusCode::from_u16(reply.status).expect("status"));
    for (name, value) in &reply.headers {
        response = response.header(*name, value);
    }
    response.body(Body::from(reply.body)).expect("response")
}

/// How a [`hang_up_url`] server ends each connection.
#[derive(Debug, Clone, Copy)]
pub enum HangUp {
    /// Reads the request and closes the connection without a byte of answer.
    Silent,
    /// Sends a 200 status line and headers announcing a longer body, half the body, then
    /// closes the connection.
    MidBody,
}

/// Returns a URL on 127.0.0.1 whose server accepts every connection and hangs up on it as
/// `how` says (a crashed or restarting service, a proxy resetting connections).
pub fn hang_up_url(path: &str, how: HangUp) -> Url {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local addr");
    std::thread::spawn(move || {
        for mut socket in listener.incoming().map_while(Result::ok) {
            let mut buffer = [0u8; 4096];
            let _ = socket.read(&mut buffer);
            if let HangUp::MidBody = how {
                let _ = socket.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                      content-length: 400\r\n\r\n{\"choices\": [{\"mess",
                );
            }
            drop(socket);
        }
    });
    Url::parse(&format!("http://{addr}{path}")).expect("url")
}
