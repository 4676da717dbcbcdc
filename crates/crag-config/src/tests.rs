use std::path::{Path, PathBuf};

use super::*;
use crag_engine::Fusion;

/// Adapter sections shaped like crag's (`crag-app` declares the real ones): a table naming a
/// port's adapter by kind, and a table absent by default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct Sections {
    /// A port's adapter.
    web_search: WebSearch,
    /// An optional service.
    llm: Option<Llm>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct WebSearch {
    /// Which adapter.
    provider: Provider,
    /// Its address.
    url: Option<String>,
    /// Its timeout.
    timeout_ms: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Provider {
    #[default]
    Off,
    Searxng,
    Duckduckgo,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct Llm {
    /// Its address.
    base_url: String,
    /// Its timeout.
    timeout_ms: u64,
}

type Config = super::Config<Sections>;

#[test]
fn empty_file_is_the_defaults() {
    let c = Config::parse("").unwrap();
    assert_eq!(c, Config::default());
    assert_eq!(c.crag.token_budget, 8000);
}

#[test]
fn unknown_keys_are_named() {
    let err = Config::parse("[crag]\ntoken_budgett = 3\n").unwrap_err();
    assert!(error_chain(&err).contains("token_budgett"), "{err:#}");
    let err = Config::parse("[web_search]\nprovider = \"bing\"\n").unwrap_err();
    assert!(error_chain(&err).contains("bing"), "{err:#}");
    let err = Config::parse("[web_searchh]\nprovider = \"off\"\n").unwrap_err();
    let text = error_chain(&err);
    assert!(text.contains("unknown key `web_searchh`"), "{text}");
    assert!(
        text.contains("`web_search`") && text.contains("`crag`"),
        "{text}"
    );
}

#[test]
fn errors_in_adapter_sections_name_their_key() {
    let err = Config::parse("[web_search]\ntimeout_ms = \"soon\"\n").unwrap_err();
    assert!(
        error_chain(&err).contains("web_search.timeout_ms"),
        "{err:#}"
    );
    let err = Config::parse("[llm]\nbase_url = \"x\"\nmodel = \"m\"\n").unwrap_err();
    let text = error_chain(&err);
    assert!(text.contains("llm.model: unknown field `model`"), "{text}");
    let err = Config::parse("web_search = 3\n").unwrap_err();
    assert!(error_chain(&err).contains("web_search"), "{err:#}");
}

#[test]
fn sections_parse() {
    let c = Config::parse(
        r#"
        [crag]
        ambiguous_filter_threshold = 0.5
        web_search_fail_mode = "closed"
        [web_search]
        provider = "searxng"
        url = "http://127.0.0.1:8888"
        timeout_ms = 2000
        "#,
    )
    .unwrap();
    assert_eq!(c.crag.ambiguous_filter_threshold, 0.5);
    assert_eq!(c.adapters.web_search.provider, Provider::Searxng);
    assert_eq!(c.adapters.web_search.timeout_ms, 2000);
}

#[test]
fn ranges_are_explained() {
    let c = Config::parse("[crag]\nweb_search_limit = 0\n").unwrap_err();
    assert!(error_chain(&c).contains("web_search_limit"), "{c:#}");
    let c = Config::parse("[server]\ngrpc_max_connection_age_ms = 0\n").unwrap_err();
    assert!(
        error_chain(&c).contains("server.grpc_max_connection_age_ms must be positive"),
        "{c:#}"
    );
    let c = Config::parse("[server]\ntls_cert_path = \"cert.pem\"\n").unwrap_err();
    assert!(error_chain(&c).contains("tls_key_path"), "{c:#}");
    let c =
        Config::parse("[server]\ntls_cert_path = \"c.pem\"\ntls_key_path = \"k.pem\"\n").unwrap();
    assert_eq!(
        c.server.tls(),
        Some((std::path::Path::new("c.pem"), std::path::Path::new("k.pem")))
    );
    assert_eq!(
        Config::default().server.tls(),
        None,
        "TLS is off by default"
    );
}

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn environment_overrides_file_and_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crag.toml");
    std::fs::write(
        &path,
        "data_dir = \"/srv/crag\"\n[server]\nhttp_addr = \"127.0.0.1:9000\"\n[crag]\ntoken_budget = 500\n",
    )
    .unwrap();
    let c = Config::load(
        Some(&path),
        vars(&[
            ("CRAG_SERVER__HTTP_ADDR", "0.0.0.0:8081"),
            ("CRAG_CRAG__RERANK__ENABLED", "false"),
            ("CRAG_LIMITS__MAX_TOP_K", "50"),
            ("CRAG_DATA_DIR", "/data"),
            ("CRAG_WEB_SEARCH__PROVIDER", "duckduckgo"),
            ("CRAG_LLM__BASE_URL", "http://127.0.0.1:1/v1"),
            ("CRAG_AUTH__TOKENS", "0123456789abcdef,fedcba9876543210"),
            ("CRAG_CONFIG", "ignored.toml"),
            ("CRAG_LOG", "debug"),
            ("CRAG_LLM_API_KEY", "secret"),
            ("HOME", "/root"),
        ]),
    )
    .unwrap();
    assert_eq!(c.server.http_addr.to_string(), "0.0.0.0:8081");
    assert_eq!(c.server.grpc_addr, ServerSection::default().grpc_addr);
    assert!(!c.crag.rerank.enabled);
    assert_eq!(c.crag.token_budget, 500, "file values survive");
    assert_eq!(c.limits.max_top_k, 50);
    assert_eq!(c.data_dir, PathBuf::from("/data"));
    assert_eq!(c.adapters.web_search.provider, Provider::Duckduckgo);
    assert_eq!(c.adapters.llm.unwrap().base_url, "http://127.0.0.1:1/v1");
    assert_eq!(c.auth.tokens.len(), 2);
}

#[test]
fn bad_overrides_name_the_variable_and_key() {
    let cases = [
        ("CRAG_SERVER__HTTP_ADRR", "1", "http_adrr"),
        ("CRAG_LIMITS__MAX_TOP_K", "lots", "CRAG_LIMITS__MAX_TOP_K"),
        ("CRAG_LIMITS__MAX_TOP_K", "0", "limits.max_top_k"),
        (
            "CRAG_SERVER__HTTP_ADDR",
            "not-an-address",
            "server.http_addr",
        ),
        ("CRAG_CRAG__TOKEN_BUDGET__X", "1", "crag.token_budget"),
        ("CRAG_NOPE__KEY", "1", "nope"),
        ("CRAG_SERVER____X", "1", "empty key segment"),
        ("CRAG_AUTH__TOKENS", "short", "at least 16"),
    ];
    for (name, value, expected) in cases {
        let err = Config::load(None, vars(&[(name, value)])).unwrap_err();
        let text = error_chain(&err);
        assert!(text.contains(expected), "{name}={value}: {text}");
    }
}

#[test]
fn file_errors_name_the_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "[server]\nmax_concurrent_requests = 0\n").unwrap();
    let err = Config::load(Some(&path), vars(&[])).unwrap_err();
    let text = error_chain(&err);
    assert!(text.contains("bad.toml"), "{text}");
    assert!(text.contains("server.max_concurrent_requests"), "{text}");
    let err = Config::parse("[limits]\nmax_query_chars = -1\n").unwrap_err();
    assert!(
        error_chain(&err).contains("limits.max_query_chars"),
        "{err:#}"
    );
    let err = Config::load(Some(&dir.path().join("missing.toml")), vars(&[])).unwrap_err();
    assert!(error_chain(&err).contains("missing.toml"), "{err:#}");
}

#[test]
fn printing_round_trips_and_redacts_tokens() {
    let mut c = Config::default();
    c.auth.tokens = vec!["0123456789abcdef0123".into()];
    c.adapters.llm = Some(Llm::default());
    let text = c.to_toml().unwrap();
    assert!(!text.contains("0123456789abcdef0123"), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
    assert!(!format!("{c:?}").contains("0123456789abcdef0123"));
    let back = Config::parse(&text.replace("<redacted>", "0123456789abcdef0123")).unwrap();
    assert_eq!(back, c);
}

/// A calibration with the right feature names and zero weights: every list scores the bias.
fn neutral_calibration() -> crag_judge::Calibration {
    use crag_judge::{
        Calibration, FeatureWeight, LogisticModel, Thresholds, CALIBRATION_VERSION,
        DOCUMENT_FEATURES, QUERY_FEATURES,
    };
    let model = |names: &[&str]| LogisticModel {
        bias: 0.0,
        features: names
            .iter()
            .map(|n| FeatureWeight {
                name: (*n).to_owned(),
                mean: 0.0,
                std: 1.0,
                weight: 0.0,
            })
            .collect(),
    };
    Calibration {
        version: CALIBRATION_VERSION,
        fitted_on: "nothing (test)".into(),
        fusion: "convex".into(),
        queries: 0,
        answerable: 0,
        documents: 0,
        relevant_documents: 0,
        target_precision: 0.9,
        l2: 1.0,
        train_auroc: 0.5,
        train_document_auroc: 0.5,
        heuristic_train_auroc: 0.5,
        thresholds: Thresholds {
            correct: 0.6,
            incorrect: 0.4,
            correct_precision: 0.9,
            incorrect_precision: 0.9,
            correct_target_reached: true,
            incorrect_target_reached: true,
        },
        document_threshold: 0.05,
        document_recall: 0.9,
        query_model: model(QUERY_FEATURES),
        document_model: model(DOCUMENT_FEATURES),
    }
}

#[test]
fn calibration_files_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calibration.toml");
    write_calibration(&path, &neutral_calibration()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("# crag calibration"), "{text}");
    assert!(text.contains("Fitted on: nothing (test)"), "{text}");
    assert_eq!(read_calibration(&path).unwrap(), neutral_calibration());
}

#[test]
fn unreadable_calibration_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old-calibration.toml");
    std::fs::write(&path, "version = 1\n").unwrap();
    let err = read_calibration(&path).unwrap_err();
    assert!(
        error_chain(&err).contains("old-calibration.toml"),
        "{err:#}"
    );
    let err = read_calibration(&dir.path().join("absent.toml")).unwrap_err();
    assert!(error_chain(&err).contains("absent.toml"), "{err:#}");
}

#[test]
fn the_example_calibration_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/calibration-scifact.toml");
    let calibration = read_calibration(&path).unwrap();
    assert!(
        calibration.fitted_on.contains("scifact"),
        "{}",
        calibration.fitted_on
    );
    assert!(calibration.thresholds.incorrect <= calibration.thresholds.correct);
    assert_eq!(
        calibration.fusion,
        Config::default().retrieval.fusion().name()
    );
}

#[test]
fn the_fusion_is_configured_and_checked() {
    let c = Config::load(
        None,
        vars(&[
            ("CRAG_RETRIEVAL__FUSION", "convex"),
            ("CRAG_RETRIEVAL__KEYWORD_WEIGHT", "0.3"),
        ]),
    )
    .unwrap();
    assert_eq!(
        c.engine_config().fusion,
        Fusion::Convex {
            keyword_weight: 0.3
        }
    );
    let rrf = Config::parse("[retrieval]\nfusion = \"rrf\"\nrrf_k = 20.0\n").unwrap();
    assert_eq!(rrf.engine_config().fusion, Fusion::Rrf { k: 20.0 });
    assert_eq!(rrf.engine_config().rrf_k, 20.0);

    let err = Config::parse("[retrieval]\nfusion = \"borda\"\n").unwrap_err();
    assert!(error_chain(&err).contains("borda"), "{err:#}");
    let err = Config::parse("[retrieval]\nkeyword_weight = 1.5\n").unwrap_err();
    assert!(
        error_chain(&err).contains("retrieval.keyword_weight"),
        "{err:#}"
    );

    let bm25 = Config::parse("[retrieval]\nbm25_k1 = 0.9\nbm25_b = 0.4\n").unwrap();
    assert_eq!((bm25.retrieval.bm25_k1, bm25.retrieval.bm25_b), (0.9, 0.4));
    for (toml, key) in [
        ("bm25_k1 = -0.5", "retrieval.bm25_k1"),
        ("bm25_b = 1.5", "retrieval.bm25_b"),
        ("bm25_title_weight = -1.0", "retrieval.bm25_title_weight"),
    ] {
        let err = Config::parse(&format!("[retrieval]\n{toml}\n")).unwrap_err();
        assert!(error_chain(&err).contains(key), "{err:#}");
    }
}

#[test]
fn calibrations_written_before_the_fusion_field_were_rrf() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rrf-calibration.toml");
    write_calibration(&path, &neutral_calibration()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let old: String = text
        .lines()
        .filter(|l| !l.starts_with("fusion ="))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, old).unwrap();
    assert_eq!(read_calibration(&path).unwrap().fusion, "rrf");
}

#[test]
fn the_ann_index_policy_is_configured_and_checked() {
    assert_eq!(
        Config::default().vector_index.ann_min_rows,
        DEFAULT_ANN_MIN_ROWS
    );
    let c = Config::load(None, vars(&[("CRAG_VECTOR_INDEX__ANN_MIN_ROWS", "5000")])).unwrap();
    assert_eq!(c.vector_index.ann_min_rows, 5000);
    let off = Config::parse("[vector_index]\nann = false\n").unwrap();
    assert!(!off.vector_index.ann);
    let err = Config::parse("[vector_index]\nann_min_rows = 10\n").unwrap_err();
    assert!(
        error_chain(&err).contains("vector_index.ann_min_rows must be at least 256"),
        "{err:#}"
    );
    let c = Config::load(
        None,
        vars(&[("CRAG_VECTOR_INDEX__METADATA_CACHE_MIB", "16")]),
    )
    .unwrap();
    assert_eq!(c.vector_index.metadata_cache_mib, 16);
    assert_eq!(c.vector_index.index_cache_mib, DEFAULT_INDEX_CACHE_MIB);
    let err = Config::parse("[vector_index]\nindex_cache_mib = 0\n").unwrap_err();
    assert!(
        error_chain(&err).contains("vector_index.index_cache_mib must be at least 1"),
        "{err:#}"
    );
    assert_eq!(Config::default().vector_index.nprobes, DEFAULT_NPROBES);
    let c = Config::parse("[vector_index]\nnprobes = 10\n").unwrap();
    assert_eq!(c.vector_index.nprobes, 10);
    let err = Config::parse("[vector_index]\nnprobes = -1\n").unwrap_err();
    assert!(error_chain(&err).contains("nprobes"), "{err:#}");
}

#[test]
fn the_embedder_precision_and_threads_are_read_and_checked() {
    assert_eq!(
        Config::default().embedder.precision,
        EmbedderPrecision::Auto
    );
    let c = Config::parse("[embedder]\nprecision = \"float32\"\n").unwrap();
    assert_eq!(c.embedder.precision, EmbedderPrecision::Float32);
    let c = Config::parse("[embedder]\nprecision = \"int8\"\nthreads = 1\n").unwrap();
    assert_eq!(c.embedder.precision, EmbedderPrecision::Int8);
    assert_eq!(c.embedder.threads, 1);
    let err = Config::parse("[embedder]\nprecision = \"int4\"\n").unwrap_err();
    assert!(error_chain(&err).contains("embedder.precision"), "{err:#}");
    let err = Config::parse("[embedder]\nthreads = 100000\n").unwrap_err();
    assert!(error_chain(&err).contains("embedder.threads"), "{err:#}");
    assert_eq!(Config::default().embedder.sessions, 0, "the model's own");
    let c = Config::parse("[embedder]\nsessions = 2\n").unwrap();
    assert_eq!(c.embedder.sessions, 2);
    let err = Config::parse("[embedder]\nsessions = 65\n").unwrap_err();
    assert!(error_chain(&err).contains("embedder.sessions"), "{err:#}");
}

#[test]
fn the_memory_scan_is_configurable() {
    assert_eq!(
        Config::default().vector_index.memory_scan_rows,
        DEFAULT_MEMORY_SCAN_ROWS
    );
    let off = Config::parse("[vector_index]\nmemory_scan_rows = 0\n").unwrap();
    assert_eq!(off.vector_index.memory_scan_rows, 0);
    let whole = Config::parse("[vector_index]\nmemory_partition_from_rows = 0\n").unwrap();
    assert_eq!(whole.vector_index.memory_partition_from_rows, 0);
    let err = Config::parse("[vector_index]\nmemory_probes = 0\n").unwrap_err();
    assert!(error_chain(&err).contains("memory_probes"), "{err:#}");
}

#[test]
fn chunking_is_configured_and_checked() {
    let c = Config::load(
        None,
        vars(&[
            ("CRAG_CHUNKING__CHUNK_TOKENS", "400"),
            ("CRAG_CHUNKING__OVERLAP_TOKENS", "0"),
        ]),
    )
    .unwrap();
    assert_eq!(c.engine_config().chunking.chunk_tokens, 400);
    assert_eq!(c.engine_config().chunking.overlap_tokens, 0);
    assert_eq!(
        Config::default().engine_config().chunking,
        crag_engine::ChunkingConfig::default()
    );
    let err = Config::parse("[chunking]\nchunk_tokens = 16\noverlap_tokens = 16\n").unwrap_err();
    assert!(
        error_chain(&err).contains("overlap_tokens (16) must be smaller"),
        "{err:#}"
    );
    let err = Config::parse("[chunking]\nchunk_tokens = 0\n").unwrap_err();
    assert!(
        error_chain(&err).contains("chunk_tokens must be at least 1"),
        "{err:#}"
    );
}

#[test]
fn scoped_tokens_are_read_checked_and_redacted() {
    let text = r#"
[[auth.scoped]]
token = "billing-token-0123456789"
filter = { team = "billing", year = { "$gte" = 2024 } }

[[auth.scoped]]
token_env = "CRAG_TEST_SCOPED"
write = true
"#;
    let c = Config::parse(text).unwrap();
    let resolved = c
        .auth
        .resolve_scoped(&|name| (name == "CRAG_TEST_SCOPED").then(|| "from-the-env-0123456".into()))
        .unwrap();
    assert_eq!(resolved.len(), 2);
    let filter = resolved[0].filter.clone().unwrap();
    assert_eq!(
        filter.to_json(),
        crag_core::MetadataFilter::from_json(&serde_json::json!(
            {"team": "billing", "year": {"$gte": 2024}}
        ))
        .unwrap()
        .to_json()
    );
    assert!(!resolved[0].write && resolved[1].write && resolved[1].filter.is_none());
    assert!(
        c.auth.resolve_scoped(&|_| None).is_err(),
        "the variable is not set"
    );
    let shown = c.to_toml().unwrap();
    assert!(!shown.contains("billing-token-0123456789"), "{shown}");
    assert!(!format!("{c:?}").contains("billing-token-0123456789"));
    for (bad, expected) in [
        ("[[auth.scoped]]\ntoken = \"short\"\n", "at least 16"),
        ("[[auth.scoped]]\nfilter = { team = \"x\" }\n", "one of token and token_env"),
        (
            "[[auth.scoped]]\ntoken = \"billing-token-0123456789\"\nfilter = { team = { \"$like\" = 1 } }\n",
            "auth.scoped[0].filter",
        ),
    ] {
        let err = Config::parse(bad).unwrap_err();
        assert!(error_chain(&err).contains(expected), "{bad}: {err:#}");
    }
}
