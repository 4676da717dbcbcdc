//! Properties on arbitrary input: no panics, bounded output, an idempotent key.

use crag_gaps::{
    classify_gap, gap_key, parse_answer_and_gaps, resolve_chunk_ids, Format, MAX_CHUNK_IDS,
    MAX_GAPS, MAX_GAP_CHARS,
};
use proptest::prelude::*;

/// Pieces small models write, glued together in any order.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("ANSWER:".to_owned()),
        Just("MISSING:".to_owned()),
        Just("MISSING (or \"NONE\" if nothing needed):".to_owned()),
        Just("**Missing:**".to_owned()),
        Just("## Answer".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just(",".to_owned()),
        Just("```json".to_owned()),
        Just("```".to_owned()),
        Just("{\"answer\": \"".to_owned()),
        Just("\"missing\": [\"".to_owned()),
        Just("\"is_sufficient\": true".to_owned()),
        Just("\"useful_chunk_ids\": [".to_owned()),
        Just("\n".to_owned()),
        Just("\n- ".to_owned()),
        Just("\n1. ".to_owned()),
        Just("(1) ".to_owned()),
        Just("• ".to_owned()),
        Just("NONE".to_owned()),
        Just("None.".to_owned()),
        Just("`".to_owned()),
        Just("verify_user in auth.py".to_owned()),
        Just("é".to_owned()),
        Just("\u{0}".to_owned()),
        "[a-zA-Z_ ]{0,12}",
        any::<String>(),
    ]
}

fn glued() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..40).prop_map(|parts| parts.concat())
}

fn assert_bounded(text: &str) {
    let parsed = parse_answer_and_gaps(text);
    assert!(parsed.gaps.len() <= MAX_GAPS, "{parsed:?}");
    assert!(parsed.useful_chunk_ids.len() <= MAX_CHUNK_IDS);
    let mut keys = std::collections::HashSet::new();
    for gap in &parsed.gaps {
        assert!(!gap.trim().is_empty());
        assert!(gap.chars().count() <= MAX_GAP_CHARS, "{gap:?}");
        assert!(
            keys.insert(gap_key(gap)),
            "duplicate {gap:?} in {:?}",
            parsed.gaps
        );
    }
    if parsed.format == Format::Unparsed {
        assert!(parsed.gaps.is_empty());
        assert!(!parsed.warnings.is_empty());
    }
    for gap in &parsed.gaps {
        let _ = classify_gap(gap);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_and_stays_bounded_on_arbitrary_strings(text in any::<String>()) {
        assert_bounded(&text);
    }

    #[test]
    fn never_panics_and_stays_bounded_on_format_fragments(text in glued()) {
        assert_bounded(&text);
    }

    #[test]
    fn stays_bounded_on_long_lists(items in prop::collection::vec("[a-z_]{1,300}", 0..40)) {
        let text = format!("ANSWER: x\nMISSING:\n- {}", items.join("\n- "));
        assert_bounded(&text);
        let json = format!(
            "{{\"answer\": \"x\", \"missing\": {}}}",
            serde_json::to_string(&items).unwrap_or_default()
        );
        assert_bounded(&json);
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn gap_key_is_idempotent(text in any::<String>()) {
        let once = gap_key(&text);
        prop_assert_eq!(gap_key(&once), once);
    }

    #[test]
    fn gap_key_is_idempotent_on_quoted_fragments(text in glued()) {
        let once = gap_key(&text);
        prop_assert_eq!(gap_key(&once), once);
    }

    #[test]
    fn classify_never_panics(text in glued()) {
        let _ = classify_gap(&text);
    }

    #[test]
    fn resolve_returns_only_prompt_ids(
        refs in prop::collection::vec(any::<String>(), 0..10),
        ids in prop::collection::vec("[a-z]{1,5}#[0-9]", 0..5),
    ) {
        let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let resolved = resolve_chunk_ids(&refs, &id_refs);
        prop_assert!(resolved.iter().all(|r| ids.contains(r)));
    }
}
