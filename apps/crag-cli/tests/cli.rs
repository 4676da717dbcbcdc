//! Drives the `crag` binary on the project's fixture corpus with the real adapters.

use std::path::{Path, PathBuf};

mod support;
use support::{assert_success, crag, stdout_json};

fn fixture_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus")
}

/// The project's small BEIR collection (corpus, queries, qrels).
fn fixture_beir() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/beir")
        .to_str()
        .expect("utf-8 path")
        .to_owned()
}

fn file_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("json file")).expect("json")
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
            "--no-crag",
            "--json",
        ],
    ));
    assert_eq!(q["query"], "what causes ocean tides?");
    assert_eq!(q["cragDecision"], serde_json::Value::Null);
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

    let reconciled = stdout_json(&crag(data.path(), &["reconcile", "--json"]));
    assert_eq!(reconciled["documentsChecked"], 6, "{reconciled}");
    assert_eq!(reconciled["orphansRemoved"], serde_json::json!([]));
    assert_eq!(reconciled["documentsRepaired"], serde_json::json!([]));
    let out = crag(data.path(), &["reconcile"]);
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("the indexes agree"));
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
        (&["reconcile"], "run `crag ingest PATH` first"),
    ];
    for (args, message) in cases {
        let out = crag(data.path(), args);
        assert!(!out.status.success(), "{args:?} must fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// A SearXNG-compatible server on 127.0.0.1 answering every search with three results about
/// the query; returns its base URL and the queries it saw.
fn fake_searxng() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use axum::extract::{Query, State};
    use axum::routing::get;
    use axum::Json;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    let seen = Arc::new(Mutex::new(Vec::new()));
    let state = Arc::clone(&seen);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let app = axum::Router::new()
                .route(
                    "/search",
                    get(
                        |State(seen): State<Arc<Mutex<Vec<String>>>>,
                         Query(params): Query<HashMap<String, String>>| async move {
                            let q = params.get("q").cloned().unwrap_or_default();
                            seen.lock().expect("lock").push(q.clone());
                            Json(serde_json::json!({
                                "query": q,
                                "results": (1..=3).map(|i| serde_json::json!({
                                    "title": format!("SpaceX launch news {i}"),
                                    "url": format!("https://news.example/spacex-{i}"),
                                    "content": format!("SpaceX launch update {i}: a Falcon 9 launch carried Starlink satellites."),
                                    "engine": "fake",
                                })).collect::<Vec<_>>(),
                            }))
                        },
                    ),
                )
                .with_state(state);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send(listener.local_addr().expect("addr")).expect("send");
            axum::serve(listener, app).await.expect("serve");
        });
    });
    let addr = rx.recv().expect("server address");
    (format!("http://{addr}/"), seen)
}

#[test]
fn corrective_rag_judges_and_falls_back_to_a_local_searxng() {
    let data = tempfile::tempdir().expect("tmp");
    let corpus = fixture_corpus();
    let corpus = corpus.to_str().expect("utf-8 path");
    stdout_json(&crag(data.path(), &["ingest", corpus, "--json"]));
    let (url, seen) = fake_searxng();

    let q = stdout_json(&crag(
        data.path(),
        &[
            "query",
            "latest SpaceX launch updates",
            "--web-search",
            "searxng",
            "--web-search-url",
            &url,
            "--json",
        ],
    ));
    assert_eq!(q["cragDecision"], "incorrect", "{q}");
    assert_eq!(q["cragWebSearchUsed"], true, "{q}");
    assert_eq!(q["cragCorrectionStrategy"], "web_search", "{q}");
    let kinds: Vec<&str> = q["corrections"]
        .as_array()
        .expect("corrections")
        .iter()
        .map(|c| c["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds[0], "web_search", "{q}");
    assert!(!kinds.contains(&"discard"), "nothing is discarded: {q}");
    // The query is all keywords already: nothing to rewrite, the web gets it as asked.
    assert!(!kinds.contains(&"rewrite"), "{q}");
    // Web results first, then the local results, kept and flagged by the verdict.
    let results = q["results"].as_array().expect("results");
    let web = results.iter().take_while(|r| r["origin"] == "web").count();
    assert!(web > 0, "{q}");
    for r in &results[..web] {
        assert_eq!(r["kind"], "web", "{r}");
        assert!(r["source"]
            .as_str()
            .expect("url")
            .starts_with("https://news.example/"));
    }
    assert_eq!(
        results.len() - web,
        q["originalCount"].as_u64().expect("originalCount") as usize,
        "{q}"
    );
    assert!(results[web..].iter().all(|r| r["origin"] == "index"), "{q}");
    let criteria = q["crag"]["criteria"].as_array().expect("criteria");
    // Seed 000's four criteria, the legs' agreement and the best document.
    assert_eq!(criteria.len(), 6, "{q}");
    assert_eq!(criteria[4]["name"], "leg_agreement", "{q}");
    assert_eq!(criteria[5]["name"], "best_document", "{q}");
    assert_eq!(seen.lock().expect("lock").len(), 1);

    // On-topic: not judged incorrect, no web search, local results.
    let q = stdout_json(&crag(
        data.path(),
        &[
            "query",
            "what causes ocean tides?",
            "--web-search",
            "searxng",
            "--web-search-url",
            &url,
            "--json",
        ],
    ));
    assert_ne!(q["cragDecision"], "incorrect", "{q}");
    assert!(q["results"][0]["source"]
        .as_str()
        .expect("source")
        .ends_with("notes/tides.txt"));

    // A batch of queries gives the verdict distribution and latencies.
    let queries = data.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        "{\"_id\": \"q1\", \"text\": \"what causes ocean tides?\"}\n{\"_id\": 2, \"text\": \"latest SpaceX launch updates\"}\n",
    )
    .expect("write queries");
    let b = stdout_json(&crag(
        data.path(),
        &[
            "query",
            "--batch",
            queries.to_str().expect("path"),
            "--json",
        ],
    ));
    assert_eq!(b["summary"]["queries"], 2);
    assert_eq!(b["queries"][0]["queryId"], "q1");
    assert_eq!(b["queries"][1]["queryId"], "2");
    let verdicts = b["summary"]["verdicts"].as_object().expect("verdicts");
    assert_eq!(
        verdicts
            .values()
            .map(|v| v.as_u64().expect("n"))
            .sum::<u64>(),
        2
    );
    assert_eq!(
        b["queries"][1]["cragDecision"], "incorrect",
        "{}",
        b["summary"]
    );
    assert_ne!(
        b["queries"][0]["cragDecision"], "incorrect",
        "{}",
        b["summary"]
    );
}

#[test]
fn a_configured_cross_encoder_reranks_candidates() {
    let data = tempfile::tempdir().expect("tmp");
    let corpus = fixture_corpus();
    stdout_json(&crag(
        data.path(),
        &["ingest", corpus.to_str().expect("path"), "--json"],
    ));
    let config = data.path().join("crag.toml");
    // The project's tiny random-weight model: checks the plumbing, not the ranking.
    std::fs::write(
        &config,
        "[reranker]\nkind = \"onnx\"\ntiny = true\n[crag.rerank]\nthreshold = 0.0\n",
    )
    .expect("write config");
    let config = config.to_str().expect("path");
    let q = stdout_json(&crag(
        data.path(),
        &[
            "--config",
            config,
            "query",
            "how do the moon and the sun cause ocean tides",
            "--no-crag",
            "--json",
        ],
    ));
    assert_eq!(q["rerank"]["modelId"], "tiny-cross-encoder", "{q}");
    assert_eq!(q["rerank"]["skipped"], serde_json::Value::Null, "{q}");
    // Six files, seven chunks (fibonacci.py is cut along its syntax: its docstring, its
    // function); whole documents are ranked, each file once.
    assert_eq!(
        q["rerank"]["candidates"], 6,
        "every document is a coarse candidate: {q}"
    );
    let results = q["results"].as_array().expect("results");
    assert_eq!(
        results.len(),
        6,
        "threshold 0 keeps all, within final k 20: {q}"
    );
    let probs: Vec<f64> = results
        .iter()
        .map(|r| r["rerank"]["probability"].as_f64().expect("probability"))
        .collect();
    assert!(probs.windows(2).all(|w| w[0] >= w[1]), "{probs:?}");
    assert!(q["timings"]["rerankMs"].as_f64().expect("ms") > 0.0);

    // Short queries are not reranked, and the result says why.
    let q = stdout_json(&crag(
        data.path(),
        &[
            "--config",
            config,
            "query",
            "ocean tides",
            "--no-crag",
            "--json",
        ],
    ));
    assert!(
        q["rerank"]["skipped"]
            .as_str()
            .expect("reason")
            .contains("words"),
        "{q}"
    );
}

#[test]
fn calibrate_self_fits_on_pseudo_queries_without_labels() {
    let data = tempfile::tempdir().expect("tmp");
    let dataset = fixture_beir();
    let index = data.path().join("index");
    let calibration = data.path().join("self.toml");
    let out = crag(
        data.path(),
        &[
            "calibrate",
            "--self",
            "--self-queries",
            "6",
            "--dataset",
            dataset.as_str(),
            "--split",
            "test",
            "--index-dir",
            index.to_str().expect("utf-8 path"),
            "--out",
            calibration.to_str().expect("utf-8 path"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_success(&out);
    // Six documents, each asked by its title: as retrieved (answerable) and with the
    // document left out (unanswerable).
    assert!(stdout.contains("6 answerable / 6 unanswerable"), "{stdout}");
    assert!(
        stdout.contains("without labels: 6 pseudo-queries"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&calibration).expect("calibration written");
    assert!(text.contains("without labels"), "{text}");
}

#[test]
fn eval_reports_the_self_calibrated_evaluator_beside_the_configured_one() {
    let data = tempfile::tempdir().expect("tmp");
    let dataset = fixture_beir();
    let report = data.path().join("report.json");
    let out = crag(
        data.path(),
        &[
            "eval",
            "--dataset",
            dataset.as_str(),
            "--stages",
            "hybrid,hybrid+crag",
            "--clients",
            "0",
            "--ablate",
            "0.5",
            "--seed",
            "7",
            "--self-calibrate",
            "6",
            "--json",
            report.to_str().expect("utf-8 path"),
        ],
    );
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("self-calibrated, no labels: "), "{stdout}");
    let evaluator = &file_json(&report)["evaluator"];
    let auroc = evaluator["selfCalibratedAuroc"].as_f64().expect("an AUROC");
    assert!((0.0..=1.0).contains(&auroc), "{auroc}");
    assert!(evaluator["auroc"].as_f64().is_some(), "{evaluator}");
}

#[test]
fn calibrate_writes_a_file_that_eval_loads() {
    let data = tempfile::tempdir().expect("tmp");
    let dataset = fixture_beir();
    let dataset = dataset.as_str();
    let index = data.path().join("index");
    let index = index.to_str().expect("utf-8 path");
    let calibration = data.path().join("calibration.toml");
    // Half of the four queries lose their relevant document: both classes to fit on.
    let out = crag(
        data.path(),
        &[
            "calibrate",
            "--dataset",
            dataset,
            "--split",
            "test",
            "--ablate",
            "0.5",
            "--seed",
            "3",
            "--index-dir",
            index,
            "--out",
            calibration.to_str().expect("utf-8 path"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_success(&out);
    assert!(stdout.contains("2 answerable / 2 unanswerable"), "{stdout}");
    assert!(stdout.contains("in-sample AUROC: calibrated"), "{stdout}");
    let text = std::fs::read_to_string(&calibration).expect("calibration written");
    assert!(text.starts_with("# crag calibration"), "{text}");
    assert!(text.contains("[[query_model.features]]"), "{text}");

    let config = data.path().join("crag.toml");
    std::fs::write(
        &config,
        format!(
            "[evaluator]\nkind = \"calibrated\"\ncalibration_file = {:?}\n",
            calibration.to_str().expect("utf-8 path")
        ),
    )
    .expect("config written");
    let report = data.path().join("report.json");
    let out = crag(
        data.path(),
        &[
            "--config",
            config.to_str().expect("utf-8 path"),
            "eval",
            "--dataset",
            dataset,
            "--ablate",
            "0.5",
            "--seed",
            "3",
            "--index-dir",
            index,
            "--clients",
            "0",
            "--json",
            report.to_str().expect("utf-8 path"),
        ],
    );
    assert_success(&out);
    let report = file_json(&report);
    let evaluator = &report["evaluator"];
    assert_eq!(evaluator["evaluator"], "calibrated");
    assert_eq!(evaluator["answerable"], 2);
    assert!(evaluator["auroc"].is_f64(), "{evaluator}");
    assert!(evaluator["heuristicAuroc"].is_f64(), "{evaluator}");
}

#[test]
fn eval_runs_only_the_chosen_stages_and_writes_trec_runs() {
    let data = tempfile::tempdir().expect("tmp");
    let dataset = fixture_beir();
    let dataset = dataset.as_str();
    let runs = data.path().join("runs");
    let report = data.path().join("report.json");
    let out = crag(
        data.path(),
        &[
            "eval",
            "--dataset",
            dataset,
            "--stages",
            "bm25,hybrid",
            "--clients",
            "0",
            "--runs",
            runs.to_str().expect("utf-8 path"),
            "--json",
            report.to_str().expect("utf-8 path"),
        ],
    );
    assert_success(&out);
    let report = file_json(&report);
    let stages: Vec<&str> = report["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s["stage"].as_str().expect("name"))
        .collect();
    assert_eq!(stages, ["bm25", "hybrid"]);
    assert!(!runs.join("vector.run").exists());

    for (stage, queries) in [("bm25", 4), ("hybrid", 4)] {
        let text = std::fs::read_to_string(runs.join(format!("{stage}.run"))).expect("run file");
        // qid Q0 docid rank score tag; ranks from 1 and scores not rising within a query.
        let mut last: Option<(String, usize, f64)> = None;
        let mut seen = std::collections::HashSet::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f.len(), 6, "{line}");
            assert_eq!(
                (f[1], f[5]),
                ("Q0", format!("crag-{stage}").as_str()),
                "{line}"
            );
            let (rank, score): (usize, f64) = (f[3].parse().unwrap(), f[4].parse().unwrap());
            match &last {
                Some((q, r, s)) if q == f[0] => {
                    assert_eq!(rank, r + 1, "{line}");
                    assert!(score <= *s, "{line}");
                }
                _ => assert_eq!(rank, 1, "{line}"),
            }
            seen.insert(f[0].to_owned());
            last = Some((f[0].to_owned(), rank, score));
        }
        assert_eq!(seen.len(), queries, "{stage}: {text}");
    }

    let out = crag(
        data.path(),
        &["eval", "--dataset", dataset, "--stages", "bm26"],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown stage `bm26`"), "{stderr}");
}

#[test]
fn openapi_prints_the_served_document() {
    let dir = tempfile::tempdir().unwrap();
    let doc = stdout_json(&crag(dir.path(), &["openapi"]));
    assert_eq!(doc["openapi"], "3.1.0");
    for path in ["/v1/query", "/v1/ask", "/v1/documents/{id}", "/healthz"] {
        assert!(doc["paths"][path].is_object(), "{path} missing");
    }
    assert!(doc["components"]["schemas"]["QueryResponse"]["properties"]["results"].is_object());
}

#[test]
fn config_schema_prints_the_file_s_json_schema() {
    let dir = tempfile::tempdir().unwrap();
    let schema = stdout_json(&crag(dir.path(), &["config", "schema"]));
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["additionalProperties"], false);
    let retrieval = &schema["$defs"]["RetrievalSection"]["properties"];
    assert_eq!(retrieval["keyword_weight"]["default"], 0.5);
    assert!(retrieval["keyword_weight"]["description"]
        .as_str()
        .unwrap()
        .contains("BM25 leg"));
}

#[test]
fn the_knowledge_graph_is_filled_in_and_routes_queries_over_the_real_adapters() {
    let data = tempfile::tempdir().expect("tmp");
    let corpus = fixture_corpus();
    let corpus = corpus.to_str().expect("path");
    let report = stdout_json(&crag(data.path(), &["ingest", corpus, "--json"]));
    assert_eq!(report["graphDocumentsFilled"], 0);
    assert!(!data.path().join("terms.sqlite").exists(), "off by default");

    let config = data.path().join("crag.toml");
    // Six documents: every term is in more than 5 % of them, and one shared chunk is all
    // there is.
    std::fs::write(
        &config,
        "[knowledge_graph]\nenabled = true\nmax_seed_share = 1.0\nmin_together = 1\n\
         [crag.router]\nknowledge_graph = \"all\"\n",
    )
    .expect("write config");
    let config = config.to_str().expect("path");
    let again = stdout_json(&crag(
        data.path(),
        &["--config", config, "ingest", corpus, "--json"],
    ));
    assert_eq!(again["documentsUnchanged"], 6, "{again}");
    assert_eq!(again["graphDocumentsFilled"], 6, "{again}");
    assert!(data.path().join("terms.sqlite").is_file());

    let q = stdout_json(&crag(
        data.path(),
        &[
            "--config",
            config,
            "query",
            "ocean tides",
            "--no-crag",
            "--json",
        ],
    ));
    assert_eq!(q["route"]["route"], "knowledge_graph", "{q}");
    let reason = q["route"]["reason"].as_str().expect("reason");
    assert!(
        reason.contains("knowledge graph: expanded with"),
        "{reason}"
    );
    assert!(
        q["results"][0]["source"]
            .as_str()
            .expect("source")
            .ends_with("notes/tides.txt"),
        "{q}"
    );

    // The route without the graph is a configuration error naming the key.
    std::fs::write(
        data.path().join("bad.toml"),
        "[crag.router]\nknowledge_graph = \"relational\"\n",
    )
    .expect("write config");
    let bad = data.path().join("bad.toml");
    let out = crag(
        data.path(),
        &["--config", bad.to_str().expect("path"), "query", "tides"],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("knowledge_graph.enabled"), "{stderr}");

    // crag eval measures the route as a stage of its own.
    let dataset = fixture_beir();
    let report = data.path().join("report.json");
    assert_success(&crag(
        data.path(),
        &[
            "--config",
            config,
            "eval",
            "--dataset",
            dataset.as_str(),
            "--stages",
            "hybrid,hybrid+kg",
            "--clients",
            "0",
            "--json",
            report.to_str().expect("utf-8 path"),
        ],
    ));
    let stages: Vec<String> = file_json(&report)["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s["stage"].as_str().expect("name").to_owned())
        .collect();
    assert_eq!(stages, ["hybrid", "hybrid+kg"]);
}
