//! What the socket-level tests share: the server as `crag serve` runs it, and a JSON POST.

use std::time::Duration;

use crag_http::{router, AppState};
use serde_json::{json, Value};

/// The bearer token the tests configure.
pub const TOKEN: &str = "socket-token-0123456789";

/// Serves the API on `listener` the way `crag serve` does (its accept loop, header timeout
/// and graceful shutdown), until the task is aborted.
pub async fn serve(listener: tokio::net::TcpListener, state: AppState) {
    let header_timeout = state.header_timeout();
    crag_http::serve(
        listener,
        router(state),
        header_timeout,
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
