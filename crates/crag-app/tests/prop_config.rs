//! Property test of the configuration parser: any TOML-like text, including real keys with
//! values of every type and out-of-range numbers, is accepted or refused with an error, never
//! a panic; what is accepted validates.

use crag_app::Config;
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn line() -> impl Strategy<Value = String> {
    let section = prop_oneof![
        Just("[retrieval]"),
        Just("[crag]"),
        Just("[crag.prf]"),
        Just("[cgrag]"),
        Just("[sessions]"),
        Just("[server]"),
        Just("[limits]"),
        Just("[auth]"),
        Just("[code]"),
        Just("[evaluator]"),
        Just("[web_search]"),
        Just("[llm]"),
        Just("[reranker]"),
        Just("[vector_index]"),
        Just("[[x]]"),
        Just("[crag"),
    ]
    .prop_map(str::to_owned);
    let key = prop_oneof![
        Just("data_dir"),
        Just("leg_depth"),
        Just("fusion"),
        Just("rrf_k"),
        Just("judge_depth"),
        Just("max_passes"),
        Just("backend"),
        Just("idle_minutes"),
        Just("tokens"),
        Just("max_concurrent_requests"),
        Just("expand_depth"),
        Just("syntax_chunks"),
        Just("kind"),
        Just("base_url"),
        Just("timeout_ms"),
        Just("provider"),
        Just("api_key_env"),
        Just("ann_min_rows"),
        Just("unknown_key"),
    ];
    let value = prop_oneof![
        Just("0".to_owned()),
        Just("-1".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("1e400".to_owned()),
        Just("nan".to_owned()),
        Just("true".to_owned()),
        Just("\"rrf\"".to_owned()),
        Just("\"brave\"".to_owned()),
        Just("\"\"".to_owned()),
        Just("[1, \"a\"]".to_owned()),
        Just("{ a = 1 }".to_owned()),
        any::<u32>().prop_map(|n| n.to_string()),
        "\"[ -~]{0,12}\"",
    ];
    prop_oneof![
        section,
        (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        "[ -~]{0,30}",
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_text_is_accepted_or_refused_without_panic(lines in prop::collection::vec(line(), 0..12)) {
        let text = lines.join("\n");
        if let Ok(config) = Config::parse(&text) {
            prop_assert!(config.validate().is_ok());
        }
    }
}
