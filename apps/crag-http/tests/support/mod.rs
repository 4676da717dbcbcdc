//! What the socket-level tests share: the server as `crag serve` runs it, and a JSON POST.
// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use crag_app::Config;
use crag_app::TokenSet;
use crag_engine::Engine;
use crag_http::{router, AppState};
use serde_json::{json, Value};

/// The bearer token the tests configure.
pub const TOKEN: &str = "socket-token-0123456789";

/// A server on 127.0.0.1 over the real stack in a temporary data directory.
pub struct Running {
    pub addr: SocketAddr,
    pub engine: Engine,
    pub server: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Running {
    /// `http://<addr>`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The server's data directory.
    pub fn data_dir(&self) -> std::path::PathBuf {
        self._dir.path().join("data")
    }
}

/// Starts the server with the default configuration changed by `tweak`, requiring [`TOKEN`].
pub async fn start(tweak: impl FnOnce(&mut Config)) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config {
        data_dir: dir.path().join("data"),
        ..Config::default()
    };
    tweak(&mut config);
    config.validate().unwrap();
    let engine = crag_app::compose::engine(&config).await.unwrap();
    let state = AppState::new(engine.clone(), &config, TokenSet::new(&[TOKEN.to_owned()])).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(serve(listener, state));
    Running {
        addr,
        engine,
        server,
        _dir: dir,
    }
}

/// Serves the API on `listener` the way `crag serve` does (its accept loop, header timeout
/// and graceful shutdown), until the task is aborted.
async fn serve(listener: tokio::net::TcpListener, state: AppState) {
    let connections = state.connections();
    crag_http::serve(
        listener,
        router(state),
        connections,
        std::future::pending(),
        Duration::from_secs(1),
    )
    .await
    .unwrap();
}

/// POSTs `body` as JSON with the bearer token; status 0 for a transport failure.
pub async fn post(client: &reqwest::Client, base: &str, path: &str, body: Value) -> (u16, Value) {
    match client
        .post(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
    {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = response.json().await.unwrap_or(Value::Null);
            (status, body)
        }
        Err(e) => (0, json!({"transport": e.to_string()})),
    }
}
