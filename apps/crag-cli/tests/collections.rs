//! `crag collections` and `--collection` on the binary, with the real adapters.

use std::path::Path;

mod support;
use support::{assert_success, crag, stdout_json};

fn corpus() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/corpus")
        .to_str()
        .expect("utf-8 path")
        .to_owned()
}

#[test]
fn collections_are_managed_and_chosen_with_collection() {
    let data = tempfile::tempdir().expect("tmp");
    let created = stdout_json(&crag(
        data.path(),
        &[
            "collections",
            "create",
            "notes",
            "--overrides",
            r#"{"retrieval": {"fusion": "rrf"}}"#,
            "--json",
        ],
    ));
    assert_eq!(created["name"], "notes");
    assert_eq!(created["overrides"]["retrieval"]["fusion"], "rrf");
    assert_eq!(created["stats"]["documents"], 0);

    let report = stdout_json(&crag(
        data.path(),
        &["--collection", "notes", "ingest", &corpus(), "--json"],
    ));
    assert_eq!(report["documentsAdded"], 6);
    let in_notes = stdout_json(&crag(
        data.path(),
        &[
            "--collection",
            "notes",
            "query",
            "what causes ocean tides?",
            "--no-crag",
            "--json",
        ],
    ));
    assert!(!in_notes["results"].as_array().expect("results").is_empty());
    let in_default = stdout_json(&crag(
        data.path(),
        &["query", "what causes ocean tides?", "--no-crag", "--json"],
    ));
    assert!(
        in_default["results"]
            .as_array()
            .expect("results")
            .is_empty(),
        "{in_default}"
    );

    let listed = stdout_json(&crag(data.path(), &["collections", "list", "--json"]));
    assert_eq!(
        listed["collections"],
        serde_json::json!(["default", "notes"])
    );
    let described = stdout_json(&crag(
        data.path(),
        &["collections", "describe", "notes", "--json"],
    ));
    assert_eq!(described["stats"]["documents"], 6);

    let missing = crag(data.path(), &["--collection", "nope", "stats"]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("no collection `nope`"), "{stderr}");

    assert_success(&crag(data.path(), &["collections", "delete", "notes"]));
    let listed = stdout_json(&crag(data.path(), &["collections", "list", "--json"]));
    assert_eq!(listed["collections"], serde_json::json!(["default"]));
    let refused = crag(data.path(), &["collections", "delete", "default"]);
    assert!(!refused.status.success());
}
