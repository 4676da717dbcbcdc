//! The lists of correction kinds, query strategies and timed stages written in the docs, the
//! proto's comments and the HTTP answer's documentation follow the engine's one list of each
//! ([`CorrectionKind`], [`QueryTimings::named`]): a kind or stage added there and not here fails.

use std::path::PathBuf;

use crag_core::CorrectionKind;
use crag_engine::QueryTimings;

fn read(path: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The text from the start of the line holding `anchor` through the first `stop` after it.
fn passage<'a>(text: &'a str, anchor: &str, stop: &str) -> &'a str {
    let at = text
        .find(anchor)
        .unwrap_or_else(|| panic!("{anchor:?} not found"));
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..]
        .find(stop)
        .map_or(text.len(), |i| at + i + stop.len());
    &text[start..end]
}

/// The words between pairs of `delimiter`, in order (`"a", "b"` -> [a, b]).
fn quoted(text: &str, delimiter: char) -> Vec<String> {
    text.split(delimiter)
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn kinds() -> Vec<&'static str> {
    CorrectionKind::iter().map(CorrectionKind::as_str).collect()
}

fn stages() -> Vec<&'static str> {
    QueryTimings::default()
        .named()
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn the_proto_comments_list_the_engine_names() {
    let proto = read("proto/crag/v1/crag.proto");
    let strategy = passage(
        &proto,
        "The strongest correction made",
        "string correction_strategy",
    );
    assert_eq!(quoted(strategy, '"'), CorrectionKind::strategies());
    let kind = passage(&proto, "\"keep\", \"discard\"", "string kind");
    assert_eq!(quoted(kind, '"'), kinds());
    let timings = passage(&proto, "Milliseconds per stage, keyed", "stages_ms");
    assert_eq!(quoted(timings, '"')[..stages().len()], stages()[..]);
}

#[test]
fn the_json_docs_list_the_engine_names() {
    let doc = read("docs/cli-json.md");
    let strategy = passage(&doc, "| `cragCorrectionStrategy` |", "\n");
    assert_eq!(quoted(strategy, '`')[1..], CorrectionKind::strategies()[..]);
    let corrections = passage(&doc, "| `corrections` | every corrective action", "\n");
    assert_eq!(quoted(corrections, '`')[1..], kinds()[..]);
    let example = passage(&doc, "\"timings\": {", "}");
    for stage in stages() {
        let key = camel_ms(stage);
        assert!(
            example.contains(&format!("\"{key}\"")),
            "{key} missing from {example}"
        );
    }
    let crag = read("docs/crag.md");
    let order = passage(&crag, "(the strongest correction:", ")");
    let order = order.split("(the strongest correction: ").nth(1).unwrap();
    let order: Vec<&str> = order.trim_end_matches(')').split(" > ").collect();
    assert_eq!(order, CorrectionKind::strategies());
    let dto = read("apps/crag-http/src/dto/query.rs");
    let strategy = passage(
        &dto,
        "/// The main correction applied:",
        "crag_correction_strategy",
    );
    assert_eq!(quoted(strategy, '`'), CorrectionKind::strategies());
}

fn camel_ms(name: &str) -> String {
    let mut parts = name.split('_');
    let mut out = parts.next().unwrap_or_default().to_owned();
    for p in parts {
        let mut c = p.chars();
        out.extend(c.next().map(|c| c.to_ascii_uppercase()));
        out.push_str(c.as_str());
    }
    out + "Ms"
}
