//! Scoped tokens kept in the shared Postgres database (`[auth] shared = true`): made, listed
//! and revoked with `crag tokens`, accepted by a running `crag serve` within `[storage]
//! read_consistency_ms` without a restart, with the scope they were made with. Needs the test
//! Postgres cluster (`CRAG_TEST_POSTGRES_URL`, started by the test script).

use std::path::Path;
use std::process::{Command, Output};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod support;
use support::{assert_success, http, http_as, serve};

/// `crag` on `data` with the shared tokens of a schema of its own.
fn crag(data: &Path, schema: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_crag"));
    command
        .arg("--data-dir")
        .arg(data)
        .env_remove("CRAG_VECTORS_URI")
        .env("CRAG_AUTH__SHARED", "true")
        .env(
            "CRAG_STORAGE__POSTGRES_URL",
            crag_ports::testsuite::postgres_url(),
        )
        .env("CRAG_STORAGE__POSTGRES_SCHEMA", schema)
        .env("CRAG_STORAGE__READ_CONSISTENCY_MS", "200");
    command
}

fn run(command: &mut Command, args: &[&str]) -> Output {
    command.args(args).output().expect("run crag")
}

/// The token `crag tokens create NAME ARGS` prints.
fn create(data: &Path, schema: &str, name: &str, args: &[&str]) -> String {
    let out = run(
        &mut crag(data, schema),
        &[&["tokens", "create", name, "--json"], args].concat(),
    );
    assert_success(&out);
    let made: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(made["name"], name);
    made["token"].as_str().expect("a token").to_owned()
}

/// Polls `POST /v1/query` with `token` until it answers `want`.
fn wait_for(addr: std::net::SocketAddr, token: &str, want: u16) -> String {
    let query = r#"{"query": "what causes ocean tides?", "topK": 3, "useCrag": false}"#;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = http_as(addr, Some(token), "POST", "/v1/query", query);
        if status == want {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "the query stayed {status} ({body}), wanted {want}"
        );
        thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn tokens_made_and_revoked_with_the_cli_reach_a_running_server() {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    let schema = format!("crag_tokens_{nanos}");
    let data = tempfile::tempdir().expect("tmp");
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus");
    let out = run(
        &mut crag(data.path(), &schema),
        &["ingest", corpus.to_str().expect("utf-8")],
    );
    assert_success(&out);

    // No token yet: authentication is on all the same.
    let (_served, addr) = serve(&mut crag(data.path(), &schema));
    let query = r#"{"query": "what causes ocean tides?", "topK": 3, "useCrag": false}"#;
    let (status, body) = http(addr, "POST", "/v1/query", query);
    assert_eq!(status, 401, "{body}");

    let reader = create(data.path(), &schema, "reader", &[]);
    assert!(reader.starts_with("crag_") && reader.len() > 40, "{reader}");
    let body = wait_for(addr, &reader, 200);
    assert!(body.contains("tides.txt"), "{body}");
    let document = r#"{"documents": [{"id": "new.txt", "text": "Sea breezes blow inland."}]}"#;
    let (status, body) = http_as(addr, Some(&reader), "POST", "/v1/documents", document);
    assert_eq!(
        status, 403,
        "a token made without --write is read-only: {body}"
    );

    // A token limited to documents the filter passes sees none of the fixtures.
    let scoped = create(
        data.path(),
        &schema,
        "billing",
        &["--filter", r#"{"team": "billing"}"#, "--write"],
    );
    let body = wait_for(addr, &scoped, 200);
    assert!(!body.contains("tides.txt"), "the filter applies: {body}");
    let (status, body) = http_as(addr, Some(&scoped), "POST", "/v1/documents", document);
    assert_ne!(status, 403, "a token made with --write may ingest: {body}");

    let out = run(
        &mut crag(data.path(), &schema),
        &["tokens", "create", "reader"],
    );
    assert!(!out.status.success(), "a name is made once");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exists"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(
        &mut crag(data.path(), &schema),
        &["tokens", "list", "--json"],
    );
    assert_success(&out);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        listed.contains("\"reader\"") && listed.contains("\"billing\""),
        "{listed}"
    );
    assert!(
        !listed.contains(&reader) && !listed.contains(&scoped),
        "tokens are never listed: {listed}"
    );

    let out = run(
        &mut crag(data.path(), &schema),
        &["tokens", "revoke", "reader"],
    );
    assert_success(&out);
    wait_for(addr, &reader, 401);
    wait_for(addr, &scoped, 200);
    let out = run(
        &mut crag(data.path(), &schema),
        &["tokens", "revoke", "reader"],
    );
    assert!(!out.status.success(), "revoked once");
}

#[test]
fn bad_tokens_requests_are_refused_with_the_reason() {
    let data = tempfile::tempdir().expect("tmp");
    let schema = "crag_tokens_refusals";
    let cases: [(&[&str], &str); 4] = [
        (&["tokens", "create", "Bad Name"], "lowercase"),
        (
            &[
                "tokens",
                "create",
                "bad-filter",
                "--filter",
                r#"{"a": {"$nope": 1}}"#,
            ],
            "filter",
        ),
        (
            &[
                "tokens",
                "create",
                "bad-collection",
                "--collections",
                "ok,No/Such",
            ],
            "collections",
        ),
        (&["tokens", "revoke", "never-made"], "no token named"),
    ];
    for (args, why) in cases {
        let out = run(&mut crag(data.path(), schema), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(stderr.contains(why), "{args:?}: {stderr}");
    }
    let out = run(
        Command::new(env!("CARGO_BIN_EXE_crag"))
            .arg("--data-dir")
            .arg(data.path())
            .env_remove("CRAG_AUTH__SHARED"),
        &["tokens", "list"],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("[auth] shared"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
