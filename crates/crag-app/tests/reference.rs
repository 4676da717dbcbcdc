//! `docs/configuration.md`'s key tables and `crag.example.toml` are generated from the
//! configuration schema; these tests fail when either is out of date. Run them with
//! `CRAG_BLESS=1` to rewrite both files from the schema.

use std::path::PathBuf;

use crag_app::{Adapters, Config};
use crag_config::reference;

fn repo_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(name)
}

fn bless() -> bool {
    std::env::var_os("CRAG_BLESS").is_some_and(|v| v == "1")
}

/// Compares `path` with `expected`, or writes it under `CRAG_BLESS=1`.
fn check(name: &str, expected: &str) {
    let path = repo_file(name);
    let actual = std::fs::read_to_string(&path).unwrap();
    if bless() {
        if actual != expected {
            std::fs::write(&path, expected).unwrap();
        }
        return;
    }
    if actual != expected {
        let line = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .unwrap_or_else(|| actual.lines().count().min(expected.lines().count()));
        panic!(
            "{name} is out of date from line {} (generated: {:?}); run \
             `CRAG_BLESS=1 cargo test -p crag-app --test reference` and commit the result",
            line + 1,
            expected.lines().nth(line).unwrap_or("<end of file>")
        );
    }
}

#[test]
fn the_configuration_reference_is_generated_from_the_schema() {
    let path = repo_file("docs/configuration.md");
    let text = std::fs::read_to_string(path).unwrap();
    let rendered = reference::render_key_tables::<Adapters>(&text).unwrap();
    check("docs/configuration.md", &rendered);
}

#[test]
fn the_example_file_is_generated_from_the_schema() {
    check("crag.example.toml", &reference::example_toml::<Adapters>());
}

#[test]
fn the_example_file_shows_the_defaults() {
    let example = Config::parse(&reference::example_toml::<Adapters>()).unwrap();
    assert_eq!(example, Config::default());
}

#[test]
fn every_key_is_documented() {
    let undocumented: Vec<String> = reference::sections::<Adapters>()
        .iter()
        .flat_map(|s| s.keys.iter().map(move |k| (s, k)))
        .filter(|(_, k)| k.doc.trim().is_empty())
        .map(|(s, k)| format!("{}.{}", s.path, k.name))
        .collect();
    assert!(
        undocumented.is_empty(),
        "keys without a doc comment: {undocumented:?}"
    );
}

#[test]
fn the_schema_describes_the_file() {
    let schema = reference::json_schema::<Adapters>();
    let properties = schema["properties"].as_object().unwrap();
    for key in ["data_dir", "retrieval", "crag", "server", "llm"] {
        assert!(properties.contains_key(key), "{key} missing");
    }
    // The file's description, not the Rust type's (`Config<A>` explains its parameter).
    assert_eq!(
        schema["description"],
        "The whole configuration: defaults, then the file, then `CRAG_` environment overrides."
    );
    // Unknown keys are refused by the file, so the schema says so too.
    assert_eq!(schema["additionalProperties"], serde_json::json!(false));
    let sections = reference::sections::<Adapters>();
    let retrieval = sections.iter().find(|s| s.path == "retrieval").unwrap();
    let fusion = retrieval.keys.iter().find(|k| k.name == "fusion").unwrap();
    assert_eq!(fusion.default, Some(toml::Value::from("convex")));
    assert!(
        fusion.doc.ends_with("One of `\"rrf\"`, `\"convex\"`."),
        "{}",
        fusion.doc
    );
}

#[test]
fn a_block_naming_no_section_or_a_missing_block_is_an_error() {
    let unknown = "<!-- keys [nowhere] -->\n<!-- /keys -->\n";
    let error = reference::render_key_tables::<Adapters>(unknown).unwrap_err();
    assert!(error.contains("no section `[nowhere]`"), "{error}");
    let error = reference::render_key_tables::<Adapters>("no blocks at all\n").unwrap_err();
    assert!(error.contains("[retrieval]"), "{error}");
    let open = "<!-- keys [retrieval] -->\n| stale |\n";
    let error = reference::render_key_tables::<Adapters>(open).unwrap_err();
    assert!(error.contains("not closed"), "{error}");
}

/// No adapter sections at all: the core of the file.
#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
struct NoAdapters {}

#[test]
fn adapter_sections_do_not_take_a_core_key() {
    let keys = |schema: serde_json::Value| -> Vec<String> {
        schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    let core = keys(reference::json_schema::<NoAdapters>());
    let adapters = keys(schemars::schema_for!(Adapters).to_value());
    assert!(core.contains(&"crag".to_string()) && adapters.contains(&"reranker".to_string()));
    let taken: Vec<_> = adapters.iter().filter(|k| core.contains(k)).collect();
    assert!(
        taken.is_empty(),
        "adapter sections named like core keys (the adapter table would take them): {taken:?}"
    );
}
