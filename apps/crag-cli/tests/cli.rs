//! Drives the `crag` binary on the project's fixture corpus with the real adapters.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn crag(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crag"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("CRAG_VECTORS_URI")
        .output()
        .expect("run crag")
}

fn fixture_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus")
}

fn stdout_json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json on stdout")
}

#[test]
fn ingest_query_stats_round_trip() {
    let data = tempfile::tempdir().expect("tmp");
    let corpus = fixture_corpus();
    let corpus = corpus.to_str().expect("utf-8 path");

    let report = stdout_json(&crag(data.path(), &["ingest", corpus, "--json"]));
    assert_eq!(report["documentsAdded"], 6);
    assert!(report["chunksWritten"].as_u64().expect("count") >= 6);

    let again = stdout_json(&crag(data.path(), &["ingest", corpus, "--json"]));
    assert_eq!(again["documentsUnchanged"], 6);
    assert_eq!(again["chunksWritten"], 0);

    let q = stdout_json(&crag(
        data.path(),
        &[
            "query",
            "what causes ocean tides?",
            "--top-k",
            "3",
            "--json",
        ],
    ));
    assert_eq!(q["query"], "what causes ocean tides?");
    assert_eq!(q["topK"], 3);
    let results = q["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    let first = &results[0];
    assert!(
        first["source"]
            .as_str()
            .expect("source")
            .ends_with("notes/tides.txt"),
        "{first}"
    );
    assert_eq!(first["rank"], 1);
    assert_eq!(first["kind"], "prose");
    assert!(first["keyword"]["rank"].is_u64() && first["vector"]["rank"].is_u64());
    let score = first["score"].as_f64().expect("score");
    assert!((0.0..=1.0).contains(&score));
    assert_eq!(first["span"]["lineStart"], 1);
    for key in ["keywordMs", "embedMs", "vectorMs", "fusionMs", "totalMs"] {
        assert!(q["timings"][key].is_f64(), "timing {key}");
    }

    let human = crag(data.path(), &["query", "marathon training"]);
    assert!(human.status.success());
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("marathon.md"), "{text}");
    assert!(text.contains("bm25 #"), "{text}");

    let stats = stdout_json(&crag(data.path(), &["stats", "--json"]));
    assert_eq!(stats["documents"], 6);
    assert_eq!(stats["keywordChunks"], stats["vectorChunks"]);
    assert_eq!(stats["dimension"], 384);
    assert!(stats["bytesOnDisk"].as_u64().expect("size") > 0);
}

#[test]
fn bad_input_is_a_clear_error() {
    let data = tempfile::tempdir().expect("tmp");
    let cases: &[(&[&str], &str)] = &[
        (&["query", "   "], "query: must not be empty"),
        (&["query", "anything"], "run `crag ingest PATH` first"),
        (&["query", "x", "--top-k", "0"], "top_k"),
        (&["ingest", "/nonexistent/crag/path"], "does not exist"),
        (
            &[
                "ingest",
                ".",
                "--chunk-tokens",
                "10",
                "--overlap-tokens",
                "10",
            ],
            "overlap_tokens",
        ),
        (&["stats"], "run `crag ingest PATH` first"),
    ];
    for (args, message) in cases {
        let out = crag(data.path(), args);
        assert!(!out.status.success(), "{args:?} must fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
