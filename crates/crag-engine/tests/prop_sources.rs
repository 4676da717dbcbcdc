//! Property tests of two readers of outside input: BEIR `corpus.jsonl` files
//! (`readers::read_beir_corpus`) and the token-window chunker (`chunk_document`). 10,000
//! cases each: no panic, and what is accepted holds the invariants.

use std::ops::Range;

use crag_core::{ChunkKind, Document, DocumentId};
use crag_engine::readers::read_beir_corpus;
use crag_engine::{chunk_document, ChunkingConfig};
use proptest::prelude::*;
use serde_json::{json, Value};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Text with the characters that break readers: control characters, quotes, backslashes,
/// multi-byte letters, emoji, whitespace of every kind.
fn awkward_text() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,40}",
        "[ \t\r\n\u{0}\u{7}\"\\\\{}é漢🦀a-z]{0,40}",
        Just(String::new()),
        Just("   ".to_owned()),
    ]
}

/// A JSON value of any type, for ids and fields.
fn any_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        awkward_text().prop_map(Value::String),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        awkward_text().prop_map(|s| json!({ "nested": s })),
        Just(json!([1, "two"])),
    ]
}

/// One line of a corpus file: a record of the usual shape with fields of any type, a record
/// missing fields, or garbage.
fn corpus_line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (any_json(), awkward_text(), awkward_text())
            .prop_map(|(id, title, text)| json!({"_id": id, "title": title, "text": text}).to_string()),
        1 => (any_json(), any_json(), any_json())
            .prop_map(|(id, title, text)| json!({"_id": id, "title": title, "text": text}).to_string()),
        1 => any_json().prop_map(|id| json!({"_id": id}).to_string()),
        1 => awkward_text(),
        1 => awkward_text().prop_map(|s| format!("{{\"_id\": \"{s}")),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_corpus_file_is_read_or_refused_with_its_line(
        lines in prop::collection::vec(corpus_line(), 0..6)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("corpus.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        match read_beir_corpus(&path) {
            Ok(loaded) => {
                let records = lines.iter().filter(|l| !l.trim().is_empty()).count();
                prop_assert!(loaded.documents.len() + loaded.skipped.len() <= records);
                for d in &loaded.documents {
                    prop_assert!(!d.id.as_str().trim().is_empty());
                    prop_assert!(!d.text.trim().is_empty());
                }
            }
            Err(e) => {
                let message = e.to_string();
                prop_assert!(!message.is_empty());
            }
        }
    }
}

/// Whitespace-separated tokens of `text`, as byte spans.
fn words(text: &str) -> Vec<Range<usize>> {
    text.split_whitespace()
        .map(|w| {
            let start = w.as_ptr() as usize - text.as_ptr() as usize;
            start..start + w.len()
        })
        .collect()
}

fn document(text: &str) -> Option<Document> {
    Document::new(
        DocumentId::new("docs/a.md").unwrap(),
        "docs/a.md",
        "A",
        text,
        ChunkKind::Prose,
    )
    .ok()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn windows_cover_every_token_and_point_at_the_source(
        text in "[a-zé漢🦀 \n\t.,]{1,200}",
        chunk_tokens in 1usize..40,
        overlap in 0usize..40,
    ) {
        let Some(doc) = document(&text) else { return Ok(()) };
        let config = ChunkingConfig { chunk_tokens, overlap_tokens: overlap };
        let spans = words(&text);
        let result = chunk_document(&doc, &spans, config);
        if overlap >= chunk_tokens {
            prop_assert!(result.is_err(), "an overlap as large as the window is refused");
            return Ok(());
        }
        let chunks = result.unwrap();
        prop_assert_eq!(chunks.is_empty(), spans.is_empty());
        let mut previous_start = None;
        for c in &chunks {
            let (start, end) = (c.span.byte_start as usize, c.span.byte_end as usize);
            prop_assert!(start < end && end <= text.len());
            prop_assert_eq!(&c.text, &text[start..end]);
            prop_assert!(c.span.line_start <= c.span.line_end);
            prop_assert!(previous_start.is_none_or(|p| p < start), "windows move forward");
            previous_start = Some(start);
        }
        for token in &spans {
            prop_assert!(
                chunks.iter().any(|c| c.span.byte_start as usize <= token.start
                    && token.end <= c.span.byte_end as usize),
                "token {:?} is in no window", token
            );
        }
    }

    #[test]
    fn arbitrary_token_spans_are_refused_or_used_without_panic(
        text in "[a-zé漢 \n]{1,60}",
        spans in prop::collection::vec((0usize..80, 0usize..80), 0..12),
        chunk_tokens in 1usize..8,
    ) {
        let Some(doc) = document(&text) else { return Ok(()) };
        let spans: Vec<Range<usize>> = spans.into_iter().map(|(a, b)| a..b).collect();
        let valid = spans.iter().all(|r| {
            r.start < r.end && r.end <= text.len()
                && text.is_char_boundary(r.start) && text.is_char_boundary(r.end)
        });
        let config = ChunkingConfig { chunk_tokens, overlap_tokens: 0 };
        if let Ok(chunks) = chunk_document(&doc, &spans, config) {
            prop_assert!(valid, "invalid spans were accepted");
            for c in &chunks {
                let (start, end) = (c.span.byte_start as usize, c.span.byte_end as usize);
                prop_assert_eq!(&c.text, &text[start..end]);
            }
        }
    }
}
