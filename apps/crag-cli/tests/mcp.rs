//! The MCP server with rmcp's client: `crag mcp` as a child process over stdio, and
//! `crag serve` with `[mcp] http` over streamable HTTP with its bearer tokens. Every tool is
//! called against the fixture corpus; errors come back as MCP errors and the connection stays
//! usable.

mod support;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ErrorCode};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt as _;
use serde_json::{json, Value};
use support::{assert_success, crag};

type Client = RunningService<RoleClient, ()>;

const TOKEN: &str = "mcp-test-token-0123456789";
const READ_ONLY: &str = "mcp-read-only-0123456789";
const PROSE_ONLY: &str = "mcp-prose-only-0123456789";
const READ_TOOLS: [&str; 7] = [
    "ask",
    "collections",
    "find_symbol",
    "get_chunk",
    "get_document",
    "search",
    "stats",
];
/// A caller of `fibonacci` for `find_symbol` to find.
const CALLER_SOURCE: &str =
    "from fibonacci import fibonacci\n\n\ndef show_sequence(n):\n    return [fibonacci(i) for i in range(n)]\n";

fn fixture_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus")
}

/// A data directory holding the fixture corpus.
fn ingested() -> tempfile::TempDir {
    let data = tempfile::tempdir().expect("tmp");
    let corpus = fixture_corpus();
    assert_success(&crag(
        data.path(),
        &["ingest", corpus.to_str().expect("utf-8 path")],
    ));
    data
}

/// How a call failed: a JSON-RPC error, or a tool result marked as an error (how rmcp answers
/// arguments that do not match the tool's schema, for the model to correct its call).
#[derive(Debug)]
enum Failure {
    Protocol(rmcp::ErrorData),
    Tool(String),
}

/// Calls a tool: its structured answer, or how it failed.
async fn call(client: &Client, tool: &str, args: Value) -> Result<Value, Failure> {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    match client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
    {
        Ok(result) if result.is_error == Some(true) => {
            Err(Failure::Tool(format!("{:?}", result.content)))
        }
        Ok(result) => Ok(result
            .structured_content
            .unwrap_or_else(|| panic!("{tool}: no structured content"))),
        Err(ServiceError::McpError(e)) => Err(Failure::Protocol(e)),
        Err(e) => panic!("{tool}: transport failure {e}"),
    }
}

async fn ok(client: &Client, tool: &str, args: Value) -> Value {
    call(client, tool, args)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
}

/// A use case's refusal: a JSON-RPC error with `code` and a message.
async fn refused(client: &Client, tool: &str, args: Value, code: ErrorCode) -> String {
    match call(client, tool, args).await {
        Err(Failure::Protocol(e)) => {
            assert_eq!(e.code, code, "{tool}: {e:?}");
            assert!(!e.message.is_empty());
            e.message.into_owned()
        }
        other => panic!("{tool}: expected error {code:?}, got {other:?}"),
    }
}

/// Arguments the schema refuses: an error result naming the problem.
async fn malformed(client: &Client, tool: &str, args: Value, names: &str) {
    match call(client, tool, args).await {
        Err(Failure::Tool(message)) => assert!(message.contains(names), "{tool}: {message}"),
        other => panic!("{tool}: expected a schema error, got {other:?}"),
    }
}

async fn tool_names(client: &Client) -> Vec<String> {
    let tools = client.list_all_tools().await.expect("tools/list");
    for tool in &tools {
        assert!(
            tool.description.as_ref().is_some_and(|d| d.len() > 40),
            "{} needs a description a model can choose by",
            tool.name
        );
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
        assert!(
            tool.output_schema.is_some(),
            "{}: no output schema",
            tool.name
        );
    }
    let mut names: Vec<String> = tools.into_iter().map(|t| t.name.into_owned()).collect();
    names.sort();
    names
}

/// Every read tool, then (with writes) ingest, find_symbol on what it added, and delete.
async fn every_tool(client: &Client, writes: bool) {
    let names = tool_names(client).await;
    let mut expected: Vec<&str> = READ_TOOLS.to_vec();
    if writes {
        expected.extend(["delete", "ingest"]);
        expected.sort_unstable();
    }
    assert_eq!(names, expected);

    let found = ok(
        client,
        "search",
        json!({"query": "how do volcanoes erupt", "top_k": 3}),
    )
    .await;
    let results = found["results"].as_array().expect("results");
    assert!(!results.is_empty() && results.len() <= 3, "{found}");
    let first = &results[0];
    assert!(
        first["source"].as_str().unwrap().contains("volcanoes"),
        "{found}"
    );
    assert!(
        first.get("keyword_rank").is_some() || first.get("vector_rank").is_some(),
        "a result names the leg that found it: {first}"
    );
    assert!(found["verdict"].is_string(), "judged by default: {found}");
    let plain = ok(
        client,
        "search",
        json!({"query": "volcanoes", "use_crag": false}),
    )
    .await;
    assert!(plain.get("verdict").is_none(), "{plain}");

    let chunk = ok(client, "get_chunk", json!({"chunk_id": first["chunk_id"]})).await;
    assert_eq!(chunk["document_id"], first["document_id"]);
    assert!(!chunk["text"].as_str().unwrap().is_empty());
    let document = ok(
        client,
        "get_document",
        json!({"document_id": first["document_id"]}),
    )
    .await;
    let chunks = document["chunks"].as_array().unwrap();
    assert!(
        chunks.iter().any(|c| c["chunk_id"] == first["chunk_id"]),
        "{document}"
    );

    let listed = ok(client, "collections", json!({})).await;
    assert_eq!(listed["collections"], json!(["default"]));
    let stats = ok(client, "stats", json!({})).await;
    assert_eq!(stats["documents"], 6, "{stats}");
    assert_eq!(stats["chunks"], stats["vector_chunks"]);

    let asked = ok(
        client,
        "ask",
        json!({"question": "how are fibonacci numbers computed", "new_session": true}),
    )
    .await;
    assert_eq!(
        asked["session_id"].as_str().map(str::len),
        Some(32),
        "{asked}"
    );
    assert!(!asked["passes"].as_array().unwrap().is_empty(), "{asked}");
    assert!(!asked["context"].as_array().unwrap().is_empty(), "{asked}");

    let symbol = ok(client, "find_symbol", json!({"name": "fibonacci"})).await;
    let definition = &symbol["definitions"][0];
    assert_eq!(definition["kind"], "function", "{symbol}");
    assert!(definition["text"]
        .as_str()
        .unwrap()
        .contains("def fibonacci"));

    errors_keep_the_connection(client).await;
    if writes {
        ingest_then_delete(client).await;
    } else {
        refused(
            client,
            "ingest",
            json!({"documents": []}),
            ErrorCode::INVALID_PARAMS,
        )
        .await;
    }
}

async fn errors_keep_the_connection(client: &Client) {
    let missing = refused(
        client,
        "get_chunk",
        json!({"chunk_id": "no-such-document#0"}),
        ErrorCode::RESOURCE_NOT_FOUND,
    )
    .await;
    assert!(missing.contains("no-such-document"), "{missing}");
    malformed(client, "search", json!({}), "missing field `query`").await;
    malformed(
        client,
        "search",
        json!({"query": "x", "colour": 1}),
        "unknown field `colour`",
    )
    .await;
    let empty = refused(
        client,
        "search",
        json!({"query": "  "}),
        ErrorCode::INVALID_PARAMS,
    )
    .await;
    assert!(empty.contains("query"), "{empty}");
    refused(
        client,
        "get_document",
        json!({"document_id": "x", "collection": "nope"}),
        ErrorCode::RESOURCE_NOT_FOUND,
    )
    .await;
    refused(
        client,
        "find_symbol",
        json!({"name": "two words"}),
        ErrorCode::INVALID_PARAMS,
    )
    .await;
    // Still answering.
    ok(client, "stats", json!({})).await;
}

async fn ingest_then_delete(client: &Client) {
    let added = ok(
        client,
        "ingest",
        json!({"documents": [
            {"id": "show.py", "source": "show.py", "kind": "code", "text": CALLER_SOURCE},
            {"id": "", "text": "refused"}
        ]}),
    )
    .await;
    assert_eq!(added["added"], 1, "{added}");
    assert_eq!(added["errors"][0]["index"], 1, "{added}");
    let symbol = ok(client, "find_symbol", json!({"name": "fibonacci"})).await;
    let callers: Vec<&str> = symbol["callers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["qualified"].as_str().unwrap())
        .collect();
    assert!(
        callers.iter().any(|q| q.ends_with("show_sequence")),
        "{symbol}"
    );
    ok(client, "delete", json!({"document_id": "show.py"})).await;
    refused(
        client,
        "get_document",
        json!({"document_id": "show.py"}),
        ErrorCode::RESOURCE_NOT_FOUND,
    )
    .await;
    refused(
        client,
        "delete",
        json!({"document_id": "show.py"}),
        ErrorCode::RESOURCE_NOT_FOUND,
    )
    .await;
}

async fn stdio(data: &Path, extra: &[&str]) -> Client {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_crag"));
    command
        .arg("--data-dir")
        .arg(data)
        .arg("mcp")
        .args(extra)
        .env_remove("CRAG_VECTORS_URI");
    ().serve(TokioChildProcess::new(command).expect("spawn crag mcp"))
        .await
        .expect("MCP initialisation over stdio")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_serves_every_tool_and_writes_only_when_allowed() {
    let data = ingested();
    let client = stdio(data.path(), &["--allow-writes"]).await;
    every_tool(&client, true).await;
    client.cancel().await.expect("close");
    let client = stdio(data.path(), &[]).await;
    every_tool(&client, false).await;
    client.cancel().await.expect("close");
}

/// `crag serve` with MCP over HTTP, killed on drop.
struct Served {
    child: std::process::Child,
    addr: SocketAddr,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn serve(data: &Path) -> Served {
    let config = data.join("crag.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[mcp]
http = true
allow_writes = true

[auth]
tokens = ["{TOKEN}"]

[[auth.scoped]]
token = "{READ_ONLY}"

[[auth.scoped]]
token = "{PROSE_ONLY}"
filter = {{ kind = "prose" }}
"#
        ),
    )
    .unwrap();
    let (http, grpc) = (free_port(), free_port());
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_crag"))
        .arg("--data-dir")
        .arg(data)
        .arg("--config")
        .arg(&config)
        .args([
            "serve",
            "--http-addr",
            &http.to_string(),
            "--grpc-addr",
            &grpc.to_string(),
        ])
        .env_remove("CRAG_VECTORS_URI")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn crag serve");
    let served = Served { child, addr: http };
    let deadline = Instant::now() + Duration::from_secs(120);
    while TcpStream::connect(http).is_err() {
        assert!(
            Instant::now() < deadline,
            "crag serve did not listen on {http}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    served
}

async fn over_http(served: &Served, token: Option<&str>) -> Result<Client, String> {
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", served.addr));
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_serves_every_tool_behind_the_tokens() {
    let data = ingested();
    let served = serve(data.path());
    let client = over_http(&served, Some(TOKEN))
        .await
        .expect("MCP over HTTP");
    every_tool(&client, true).await;
    let code = ok(
        &client,
        "search",
        json!({"query": "fibonacci", "kinds": ["code"], "use_crag": false}),
    )
    .await;
    let code_document = code["results"][0]["document_id"].clone();
    assert!(code_document.is_string(), "{code}");
    client.cancel().await.expect("close");

    assert!(
        over_http(&served, None).await.is_err(),
        "no token, no session"
    );
    assert!(over_http(&served, Some("wrong-token-0123456789"))
        .await
        .is_err());

    let reader = over_http(&served, Some(READ_ONLY))
        .await
        .expect("read-only token");
    ok(&reader, "search", json!({"query": "sourdough"})).await;
    let message = refused(
        &reader,
        "ingest",
        json!({"documents": [{"id": "x.md", "text": "x"}]}),
        ErrorCode::INVALID_REQUEST,
    )
    .await;
    assert!(message.contains("may not"), "{message}");
    reader.cancel().await.expect("close");

    // A scope hides what it does not pass, in every tool.
    let prose = over_http(&served, Some(PROSE_ONLY))
        .await
        .expect("scoped token");
    let code = ok(&prose, "find_symbol", json!({"name": "fibonacci"})).await;
    assert_eq!(code["definitions"], json!([]), "{code}");
    let found = ok(
        &prose,
        "search",
        json!({"query": "fibonacci numbers", "use_crag": false}),
    )
    .await;
    assert!(
        found["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["kind"] == "prose"),
        "{found}"
    );
    refused(
        &prose,
        "get_document",
        json!({"document_id": code_document}),
        ErrorCode::RESOURCE_NOT_FOUND,
    )
    .await;
    prose.cancel().await.expect("close");
}
