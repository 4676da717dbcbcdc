//! A local HTTP server answering every request with one canned response and recording what it
//! received; it can require headers (an API key) and refuse requests without them.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use crag_ports::WebResult;
use url::Url;

/// The response the server gives to every request.
#[derive(Debug, Clone)]
pub struct Canned {
    status: StatusCode,
    content_type: &'static str,
    body: String,
    delay: Duration,
    headers: Vec<(&'static str, &'static str)>,
    required: Vec<(&'static str, &'static str)>,
}

impl Canned {
    /// 200 with a JSON body.
    pub fn json(body: impl Into<String>) -> Self {
        Self::new(StatusCode::OK, "application/json", body)
    }

    /// 200 with an HTML body.
    pub fn html(body: impl Into<String>) -> Self {
        Self::new(StatusCode::OK, "text/html; charset=UTF-8", body)
    }

    /// `status` with a short HTML error page.
    pub fn error(status: u16) -> Self {
        let status = StatusCode::from_u16(status).unwrap();
        let body = format!("<html><body><h1>{status}</h1>upstream said no</body></html>");
        Self::new(status, "text/html", body)
    }

    fn new(status: StatusCode, content_type: &'static str, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type,
            body: body.into(),
            delay: Duration::ZERO,
            headers: Vec::new(),
            required: Vec::new(),
        }
    }

    /// The same answer with another status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = StatusCode::from_u16(status).unwrap();
        self
    }

    /// The same answer, sent after `delay`.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The same answer with one more header.
    pub fn with_header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.push((name, value));
        self
    }

    /// The same answer, given only to requests carrying header `name` with exactly `value`;
    /// the others get 401 and a JSON error naming the header.
    pub fn requiring_header(mut self, name: &'static str, value: &'static str) -> Self {
        self.required.push((name, value));
        self
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: Method,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub form: Vec<(String, String)>,
    pub content_type: Option<String>,
    pub user_agent: Option<String>,
    pub headers: HeaderMap,
}

impl Seen {
    /// Values of query parameter `name`.
    pub fn query_values(&self, name: &str) -> Vec<&str> {
        values(&self.query, name)
    }

    /// Value of header `name`, if it was sent once as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        let mut values = self.headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (Some(value), None) => value.to_str().ok(),
            _ => None,
        }
    }

    /// Values of form field `name`.
    pub fn form_values(&self, name: &str) -> Vec<&str> {
        values(&self.form, name)
    }
}

fn values<'a>(pairs: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    pairs
        .iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .collect()
}

#[derive(Clone)]
struct Shared {
    canned: Arc<Canned>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A running server; it stops with the test's runtime.
pub struct TestServer {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl TestServer {
    /// Starts a server on 127.0.0.1 answering `canned` to every request.
    pub async fn start(canned: Canned) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            canned: Arc::new(canned),
            seen: seen.clone(),
        };
        let app = Router::new().fallback(answer).with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, seen }
    }

    /// URL of `path` on this server.
    pub fn url(&self, path: &str) -> Url {
        Url::parse(&format!("http://{}{path}", self.addr)).unwrap()
    }

    /// Requests received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn answer(
    State(shared): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> Response {
    let header_text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let pairs = |text: &str| -> Vec<(String, String)> {
        url::form_urlencoded::parse(text.as_bytes())
            .into_owned()
            .collect()
    };
    shared.seen.lock().unwrap().push(Seen {
        method,
        path: uri.path().to_owned(),
        query: pairs(uri.query().unwrap_or_default()),
        form: pairs(&body),
        content_type: header_text(header::CONTENT_TYPE),
        user_agent: header_text(header::USER_AGENT),
        headers: headers.clone(),
    });
    let canned = &shared.canned;
    let missing = canned
        .required
        .iter()
        .find(|(name, value)| headers.get(*name).and_then(|v| v.to_str().ok()) != Some(*value));
    if let Some((name, _)) = missing {
        let body = format!(r#"{{"error": "missing or wrong header {name}"}}"#);
        let mut response = (StatusCode::UNAUTHORIZED, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return response;
    }
    if !canned.delay.is_zero() {
        tokio::time::sleep(canned.delay).await;
    }
    let mut response = (canned.status, canned.body.clone()).into_response();
    let response_headers = response.headers_mut();
    response_headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(canned.content_type),
    );
    for (name, value) in &canned.headers {
        response_headers.insert(*name, HeaderValue::from_static(value));
    }
    response
}

/// Contents of `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// A URL on 127.0.0.1 where nothing listens: a port bound, then released.
pub fn refused_url(path: &str) -> Url {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    Url::parse(&format!("http://{addr}{path}")).unwrap()
}

/// The results as `(title, url, snippet)` triples, for readable comparisons.
pub fn triples(results: &[WebResult]) -> Vec<(&str, &str, &str)> {
    results
        .iter()
        .map(|r| (r.title.as_str(), r.url.as_str(), r.snippet.as_str()))
        .collect()
}

/// Upper bound on the duration of a call that should time out after 200 ms.
pub const TIMEOUT_BOUND: Duration = Duration::from_secs(2);

/// How long the server stalls in the timeout tests.
pub const STALL: Duration = Duration::from_secs(10);

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
