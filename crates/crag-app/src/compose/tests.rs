use std::path::{Path, PathBuf};

use crag_config::{read_calibration, write_calibration, DEFAULT_ANN_MIN_ROWS};
use crag_judge::Calibration;
use crag_lancedb::AnnPolicy;

use super::*;

fn example_calibration_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/calibration-scifact.toml")
}

fn example_calibration() -> Calibration {
    read_calibration(&example_calibration_path()).unwrap()
}

/// The configuration of the calibrated evaluator reading the file at `path`.
fn calibrated_evaluator(path: &Path) -> String {
    format!(
        "[evaluator]\nkind = \"calibrated\"\ncalibration_file = {:?}\n",
        path.display().to_string()
    )
}

#[test]
fn adapters_are_built_by_kind() {
    let c = Config::parse(
        "[web_search]\nprovider = \"searxng\"\nurl = \"http://127.0.0.1:8888\"\n\
         [evaluator]\nkind = \"heuristic\"\n",
    )
    .unwrap();
    let parts = components(&c).unwrap();
    assert_eq!(parts.web_search.unwrap().name(), "searxng");
    assert_eq!(parts.evaluator.name(), "heuristic");
    assert!(parts.reranker.is_none());
    let ddg = Config::parse("[web_search]\nprovider = \"duckduckgo\"\n").unwrap();
    assert_eq!(
        components(&ddg).unwrap().web_search.unwrap().name(),
        "duckduckgo"
    );
    let llm = Config::parse(
        "[llm]\nbase_url = \"http://127.0.0.1:8089/v1\"\nmodel = \"m\"\n[evaluator]\nkind = \"llm\"\n",
    )
    .unwrap();
    let parts = components(&llm).unwrap();
    assert_eq!(parts.evaluator.name(), "llm");
    assert!(parts.rewriter.is_some(), "llm.rewrite defaults to true");
}

#[test]
fn adapter_sections_are_read_and_their_errors_named() {
    let c = Config::parse(
        "[reranker]\nkind = \"http\"\nurl = \"http://127.0.0.1:1\"\n\
         [evaluator.heuristic]\ncorrect_threshold = 0.8\n",
    )
    .unwrap();
    assert_eq!(c.adapters.reranker.kind, RerankerKind::Http);
    assert_eq!(c.adapters.evaluator.heuristic.correct_threshold, 0.8);
    assert_eq!(c.adapters.web_search, WebSearchSection::default());
    for (text, named) in [
        ("[reranker]\ntimeout_ms = \"soon\"\n", "reranker.timeout_ms"),
        ("[evaluator.http]\ntop_n = -1\n", "evaluator.http.top_n"),
        ("[evaluator]\nkindd = \"llm\"\n", "kindd"),
        ("[web_search]\nprovider = \"bing\"\n", "bing"),
        ("[rerankerr]\nkind = \"http\"\n", "unknown key `rerankerr`"),
    ] {
        let err = Config::parse(text).unwrap_err();
        assert!(crate::error_chain(&err).contains(named), "{text}: {err:#}");
    }
    let vars = [
        ("CRAG_RERANKER__TIMEOUT_MS", "100"),
        ("CRAG_LLM__BASE_URL", "http://127.0.0.1:1/v1"),
        ("CRAG_EVALUATOR__KIND", "calibrated"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let c = Config::load(None, vars).unwrap();
    assert_eq!(c.adapters.reranker.timeout_ms, 100);
    assert_eq!(c.adapters.llm.unwrap().base_url, "http://127.0.0.1:1/v1");
    assert_eq!(c.adapters.evaluator.kind, EvaluatorKind::Calibrated);
    let err = Config::load(None, [("CRAG_RERANKER__TIMEOUT_MS".into(), "soon".into())]);
    assert!(
        crate::error_chain(&err.unwrap_err()).contains("CRAG_RERANKER__TIMEOUT_MS"),
        "the variable is named"
    );
    assert_eq!("llm".parse::<EvaluatorKind>(), Ok(EvaluatorKind::Llm));
    assert!("bing".parse::<WebProvider>().is_err());
    assert_eq!("brave".parse::<WebProvider>(), Ok(WebProvider::Brave));
}

#[test]
fn missing_requirements_are_explained() {
    let c = Config::parse("[evaluator]\nkind = \"llm\"\n").unwrap();
    let err = components(&c).unwrap_err();
    assert!(err.to_string().contains("[llm]"), "{err}");
    let c = Config::parse("[web_search]\nprovider = \"searxng\"\n").unwrap();
    let err = components(&c).unwrap_err();
    assert!(err.to_string().contains("web_search.url"), "{err}");
    let c = Config::parse(
        "[web_search]\nprovider = \"brave\"\napi_key_env = \"CRAG_TEST_BRAVE_KEY_NEVER_SET\"\n",
    )
    .unwrap();
    let err = components(&c).unwrap_err();
    assert_eq!(
        err.to_string(),
        "web_search.provider = \"brave\" needs a Brave Search API key: the environment variable \
         CRAG_TEST_BRAVE_KEY_NEVER_SET (web_search.api_key_env) is not set or empty"
    );
    let c = Config::parse("[evaluator]\nkind = \"http\"\n").unwrap();
    let err = components(&c).unwrap_err();
    assert!(err.to_string().contains("[evaluator.http]"), "{err}");
    let err =
        components(&Config::parse("[evaluator]\nkind = \"calibrated\"\n").unwrap()).unwrap_err();
    assert!(err.to_string().contains("calibration_file"), "{err}");
}

#[test]
fn the_example_calibration_loads() {
    let calibration = example_calibration();
    assert!(
        calibration.fitted_on.contains("scifact"),
        "{}",
        calibration.fitted_on
    );
    // Fitted under the default fusion, so the default configuration loads it.
    let config = calibrated_evaluator(&example_calibration_path());
    let parts = components(&Config::parse(&config).unwrap()).unwrap();
    assert_eq!(parts.evaluator.name(), "calibrated");
}

#[test]
fn calibration_files_with_other_features_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old-calibration.toml");
    let mut calibration = example_calibration();
    calibration.query_model.features[0].name = "retired_feature".into();
    write_calibration(&path, &calibration).unwrap();
    let err = components(&Config::parse(&calibrated_evaluator(&path)).unwrap()).unwrap_err();
    let message = crate::error_chain(&err);
    assert!(message.contains("old-calibration.toml"), "{message}");
    assert!(message.contains("retired_feature"), "{message}");
}

#[test]
fn a_calibration_fitted_under_another_fusion_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rrf-calibration.toml");
    let calibration = Calibration {
        fusion: "rrf".into(),
        ..example_calibration()
    };
    write_calibration(&path, &calibration).unwrap();
    let config = format!(
        "[retrieval]\nfusion = \"convex\"\n{}",
        calibrated_evaluator(&path)
    );
    let err = components(&Config::parse(&config).unwrap()).unwrap_err();
    let message = crate::error_chain(&err);
    assert!(message.contains("rrf-calibration.toml"), "{message}");
    assert!(message.contains("retrieval.fusion"), "{message}");
    let under_rrf = config.replace("\"convex\"", "\"rrf\"");
    let parts = components(&Config::parse(&under_rrf).unwrap()).unwrap();
    assert_eq!(parts.evaluator.name(), "calibrated");
}

#[test]
fn the_ann_policy_follows_the_configuration() {
    assert_eq!(
        DEFAULT_ANN_MIN_ROWS,
        crag_lancedb::DEFAULT_ANN_MIN_ROWS,
        "the schema's default is the adapter's"
    );
    assert_eq!(
        crag_config::DEFAULT_MEMORY_SCAN_ROWS,
        crag_lancedb::DEFAULT_MEMORY_SCAN_ROWS,
        "the schema's default is the adapter's"
    );
    assert_eq!(
        (
            crag_config::DEFAULT_MEMORY_PARTITION_FROM_ROWS,
            crag_config::DEFAULT_MEMORY_PROBES
        ),
        (
            crag_lancedb::DEFAULT_PARTITION_FROM_ROWS,
            crag_lancedb::DEFAULT_PARTITION_PROBES
        ),
        "the schema's defaults are the adapter's"
    );
    assert_eq!(
        ann_policy(&Config::default().vector_index),
        AnnPolicy::FromRows(DEFAULT_ANN_MIN_ROWS)
    );
    let c = Config::parse("[vector_index]\nann_min_rows = 5000\n").unwrap();
    assert_eq!(ann_policy(&c.vector_index), AnnPolicy::FromRows(5000));
    let off = Config::parse("[vector_index]\nann = false\n").unwrap();
    assert_eq!(ann_policy(&off.vector_index), AnnPolicy::Off);
}

#[test]
fn the_cache_budget_follows_the_configuration() {
    assert_eq!(
        cache_budget(&Config::default().vector_index),
        crag_lancedb::CacheBudget::default(),
        "the schema's defaults are the adapter's"
    );
    let c =
        Config::parse("[vector_index]\nmetadata_cache_mib = 8\nindex_cache_mib = 100\n").unwrap();
    assert_eq!(
        cache_budget(&c.vector_index),
        crag_lancedb::CacheBudget {
            metadata_bytes: 8 << 20,
            index_bytes: 100 << 20
        }
    );
}

#[test]
fn an_index_refuses_another_embedding_model() {
    let dir = tempfile::tempdir().unwrap();
    // A new index records the configured model; the same model opens it again.
    check_embedding_model(dir.path(), "all-MiniLM-L6-v2-int8", 0).unwrap();
    check_embedding_model(dir.path(), "all-MiniLM-L6-v2-int8", 10).unwrap();
    let err = check_embedding_model(dir.path(), "all-MiniLM-L6-v2", 10).unwrap_err();
    let msg = crate::error_chain(&err);
    assert!(
        msg.contains("built with the embedding model all-MiniLM-L6-v2-int8")
            && msg.contains("[embedder] precision"),
        "{msg}"
    );
    // An index from before the record was built by the float32 model.
    let old = tempfile::tempdir().unwrap();
    let err = check_embedding_model(old.path(), "all-MiniLM-L6-v2-int8", 5).unwrap_err();
    assert!(
        crate::error_chain(&err).contains("all-MiniLM-L6-v2,"),
        "{err:#}"
    );
    check_embedding_model(old.path(), "all-MiniLM-L6-v2", 5).unwrap();
    let recorded = std::fs::read_to_string(old.path().join(EMBEDDING_MODEL_FILE)).unwrap();
    assert_eq!(recorded.trim(), "all-MiniLM-L6-v2");
}

#[test]
fn the_embedder_follows_the_configuration() {
    let assets = default_assets_dir();
    let c =
        Config::parse("[embedder]\nprecision = \"int8\"\nthreads = 1\nspinning = false\n").unwrap();
    let config = embedder_config(&c.embedder, Precision::Int8, &assets).unwrap();
    assert_eq!(config.model_id, "all-MiniLM-L6-v2-int8");
    assert_eq!((config.threads, config.batch_size), (1, 1));
    assert!(!config.spinning);
    assert!(config.assets.model.ends_with("model-int8.onnx"));
    assert_eq!(
        config.sessions,
        crag_onnx::PER_CORE_SESSIONS,
        "the model's own"
    );
    let three = Config::parse("[embedder]\nsessions = 3\n").unwrap();
    let config = embedder_config(&three.embedder, Precision::Int8, &assets).unwrap();
    assert_eq!(config.sessions, 3);
    let float = embedder_config(&Config::default().embedder, Precision::Float32, &assets).unwrap();
    assert_eq!(float.model_id, "all-MiniLM-L6-v2");
    assert_eq!((float.batch_size, float.sessions), (32, 1));
    assert!(float.spinning, "ONNX Runtime's default");
    assert!(float.assets.model.ends_with("model.onnx"));
}

#[test]
fn auto_precision_follows_the_index_and_is_int8_for_a_new_one() {
    use crag_config::EmbedderPrecision::{Auto, Float32, Int8};
    let resolve = |configured, dir: &std::path::Path, stored| {
        resolve_precision(configured, dir, stored).unwrap()
    };
    let new = tempfile::tempdir().unwrap();
    assert_eq!(resolve(Auto, new.path(), 0), Precision::Int8);
    assert_eq!(resolve(Float32, new.path(), 0), Precision::Float32);
    // An index from before the record: built by the float32 model.
    assert_eq!(resolve(Auto, new.path(), 7), Precision::Float32);
    assert_eq!(resolve(Int8, new.path(), 7), Precision::Int8);
    // A recorded model decides, whatever the index holds.
    for (recorded, expected) in [
        ("all-MiniLM-L6-v2-int8", Precision::Int8),
        ("all-MiniLM-L6-v2", Precision::Float32),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(EMBEDDING_MODEL_FILE),
            format!("{recorded}\n"),
        )
        .unwrap();
        assert_eq!(resolve(Auto, dir.path(), 0), expected, "{recorded}");
        assert_eq!(resolve(Auto, dir.path(), 12), expected, "{recorded}");
        let id = expected.model_id("all-MiniLM-L6-v2");
        check_embedding_model(dir.path(), &id, 12).unwrap();
    }
    // An unknown record resolves to float32, which the model check then refuses by name.
    let odd = tempfile::tempdir().unwrap();
    std::fs::write(odd.path().join(EMBEDDING_MODEL_FILE), "e5-small\n").unwrap();
    assert_eq!(resolve(Auto, odd.path(), 3), Precision::Float32);
    let err = check_embedding_model(odd.path(), "all-MiniLM-L6-v2", 3).unwrap_err();
    assert!(crate::error_chain(&err).contains("e5-small"), "{err:#}");
}

#[test]
fn the_configured_bm25_defaults_are_the_keyword_index_defaults() {
    let retrieval = crag_config::RetrievalSection::default();
    let bm25 = crag_tantivy::Bm25::default();
    assert_eq!(
        (
            retrieval.bm25_k1,
            retrieval.bm25_b,
            retrieval.bm25_title_weight
        ),
        (bm25.k1, bm25.b, bm25.title_weight)
    );
}

#[tokio::test]
async fn shared_stores_in_postgres_need_a_url_and_errors_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let postgres = |text: &str| {
        Config::parse(&format!(
            "vectors_uri = \"/srv/shared\"\n[storage]\ngraphs = \"postgres\"\n\
             keyword = \"lancedb\"\n{text}"
        ))
    };
    let missing = postgres("").unwrap();
    let err = graphs::open(&missing, dir.path(), true).await.unwrap_err();
    let text = crag_config::error_chain(&err);
    assert!(
        text.contains("storage.graphs = \"postgres\" needs storage.postgres_url"),
        "{text}"
    );
    let bad = postgres("postgres_url = \"not a url\"\n").unwrap();
    let err = graphs::open(&bad, dir.path(), false).await.unwrap_err();
    let text = crag_config::error_chain(&err);
    assert!(
        text.contains("storage.postgres_url") && text.contains("invalid Postgres URL"),
        "{text}"
    );
    let schema =
        postgres("postgres_url = \"postgres://x@127.0.0.1:1/x\"\npostgres_schema = \"pg_x\"\n")
            .unwrap();
    let err = graphs::open(&schema, dir.path(), false).await.unwrap_err();
    assert!(err.to_string().contains("storage.postgres_schema"), "{err}");
    let local = Config::parse(
        "[storage]\ngraphs = \"postgres\"\npostgres_url = \"postgres://x@127.0.0.1:1/x\"\n",
    )
    .unwrap();
    let err = graphs::open(&local, dir.path(), false).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("set storage.keyword = \"lancedb\" and vectors_uri"),
        "{err}"
    );
    assert!(
        !dir.path().join(SYMBOLS_FILE).exists(),
        "no SQLite file is made"
    );

    let sessions = Config::parse("[sessions]\nbackend = \"postgres\"\n").unwrap();
    let err = session_store(&sessions).await.unwrap_err().to_string();
    assert!(
        err.contains("sessions.url, sessions.url_env or storage.postgres_url"),
        "{err}"
    );
    let unset = Config::parse(
        "[sessions]\nbackend = \"postgres\"\n[storage]\n\
         postgres_url_env = \"CRAG_TEST_UNSET_POSTGRES_URL_VARIABLE\"\n",
    )
    .unwrap();
    let err = session_store(&unset).await.unwrap_err().to_string();
    assert!(
        err.contains("(storage.postgres_url_env) is not set"),
        "{err}"
    );
}

#[test]
fn collections_keep_their_graphs_in_a_schema_of_their_own() {
    let base = Config::parse("[storage]\npostgres_schema = \"prod\"\n").unwrap();
    let descriptor = crate::collections::Descriptor {
        name: "docs".into(),
        created_ms: 0,
        embedding_model: String::new(),
        overrides: serde_json::Map::new(),
    };
    let config = crate::collections::config_for(&base, &descriptor).unwrap();
    assert_eq!(config.adapters.storage.postgres_schema, "prod/docs");
    assert_eq!(base.adapters.storage.postgres_schema, "prod");
}
