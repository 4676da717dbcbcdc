//! Replies of a 135M model (and hand-written ones in its style) read end to end.

use crag_gaps::{
    classify_gap, parse_answer_and_gaps, resolve_chunk_ids, Format, GapQuery, ParsedReply,
    MAX_GAPS, MAX_GAP_CHARS,
};

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/",
            $path
        ))
    };
}

#[track_caller]
fn read(text: &str) -> ParsedReply {
    let parsed = parse_answer_and_gaps(text);
    assert!(parsed.gaps.len() <= MAX_GAPS);
    assert!(parsed
        .gaps
        .iter()
        .all(|g| !g.is_empty() && g.chars().count() <= MAX_GAP_CHARS));
    parsed
}

#[track_caller]
fn assert_unparsed(text: &str) {
    let parsed = read(text);
    assert_eq!(parsed.format, Format::Unparsed, "{parsed:#?}");
    assert!(parsed.gaps.is_empty());
    assert_eq!(parsed.answer.as_deref(), Some(text.trim()));
    assert_eq!(parsed.warnings.len(), 1, "{:?}", parsed.warnings);
}

#[test]
fn replies_without_any_format_are_unparsed_with_no_gaps() {
    for text in [
        fixture!("smollm2_135m/numbered_list_repeating_itself.txt"),
        fixture!("smollm2_135m/numbered_answer_labels.txt"),
        fixture!("smollm2_135m/numbered_chunk_references.txt"),
        fixture!("smollm2_135m/restates_context_ids.txt"),
        fixture!("smollm2_135m/prose_mentioning_template.txt"),
        fixture!("smollm2_135m/code_with_unrelated_json_object.txt"),
        fixture!("smollm2_135m/pseudo_json_in_code.txt"),
        fixture!("hand_written/numbered_restatement_without_headers.txt"),
    ] {
        assert_unparsed(text);
    }
}

#[test]
fn an_echoed_prompt_gives_no_answer_and_no_gaps() {
    let parsed = read(fixture!("smollm2_135m/echoes_prompt_then_template.txt"));
    assert_eq!(parsed.format, Format::Sections);
    assert_eq!(parsed.answer, None);
    assert!(parsed.gaps.is_empty());
    assert!(parsed.warnings.iter().any(|w| w.contains("placeholder")));
}

#[test]
fn echoed_template_examples_are_not_gaps() {
    for text in [
        fixture!("smollm2_135m/echoes_template_examples_repeated.txt"),
        fixture!("smollm2_135m/template_variant_without_answer_header.txt"),
    ] {
        let parsed = read(text);
        assert_eq!(parsed.format, Format::Sections);
        assert_eq!(parsed.answer, None, "{parsed:#?}");
        assert!(parsed.gaps.is_empty(), "{parsed:#?}");
        assert!(parsed
            .warnings
            .iter()
            .any(|w| w.contains("repeating the prompt")));
    }
}

#[test]
fn an_echoed_json_template_gives_nothing() {
    let parsed = read(fixture!("smollm2_135m/echoes_json_template.txt"));
    assert_eq!(parsed.format, Format::Json);
    assert_eq!(parsed.answer, None);
    assert!(parsed.gaps.is_empty());
    assert!(parsed.useful_chunk_ids.is_empty());
    assert_eq!(parsed.is_sufficient, Some(true));
}

#[test]
fn truncated_json_is_closed_and_read() {
    let parsed = read(fixture!("smollm2_135m/truncated_json_in_open_fence.txt"));
    assert_eq!(parsed.format, Format::Json);
    let answer = parsed.answer.unwrap_or_default();
    assert!(
        answer.starts_with("The answer is not sufficient."),
        "{answer}"
    );
    assert!(parsed.gaps.is_empty());
    assert!(parsed.warnings.iter().any(|w| w.contains("cut short")));
}

#[test]
fn the_first_real_answer_of_repeated_headings_is_kept() {
    let parsed = read(fixture!("smollm2_135m/repeated_answer_headings.txt"));
    assert_eq!(parsed.format, Format::Sections);
    assert_eq!(
        parsed.answer.as_deref(),
        Some("This is a specific type of error that can only be logged once per function.")
    );
    assert!(parsed.gaps.is_empty());
}

#[test]
fn an_echoed_question_can_be_dropped_from_the_gaps() {
    let mut parsed = read(fixture!("smollm2_135m/question_echoed_as_missing.txt"));
    assert_eq!(parsed.format, Format::Sections);
    assert_eq!(
        parsed.gaps,
        ["How does login check the password?", "Awesome answer!"]
    );
    assert_eq!(
        parsed.drop_question_echo("how does login check the password"),
        1
    );
    assert_eq!(parsed.gaps, ["Awesome answer!"]);
    // What is left is fuzzy: a vector search, bounded by the loop's passes.
    assert!(!classify_gap(&parsed.gaps[0]).is_specific());
}

#[test]
fn missing_none_with_a_period_means_no_gaps() {
    let parsed = read(fixture!("hand_written/missing_none_with_period.txt"));
    assert_eq!(parsed.format, Format::Sections);
    assert!(parsed.answer.unwrap_or_default().starts_with("login looks"));
    assert!(parsed.gaps.is_empty());
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
}

#[test]
fn markdown_with_prose_around_gives_clean_deduplicated_gaps() {
    let parsed = read(fixture!("hand_written/markdown_headers_with_prose.txt"));
    assert_eq!(parsed.format, Format::Sections);
    assert!(parsed
        .answer
        .unwrap_or_default()
        .starts_with("login calls `verify_user(user, password)`"));
    assert_eq!(
        parsed.gaps,
        [
            "`verify_user` in auth/service.py",
            "the users.find method",
            "create_session"
        ]
    );
    let queries: Vec<GapQuery> = parsed.gaps.iter().map(|g| classify_gap(g)).collect();
    assert_eq!(
        queries,
        [
            GapQuery::SymbolInPath {
                symbol: "verify_user".into(),
                path: "auth/service.py".into()
            },
            GapQuery::Qualified {
                path: vec!["users".into(), "find".into()]
            },
            GapQuery::Symbol {
                name: "create_session".into(),
                kind: None
            },
        ]
    );
}

#[test]
fn json_in_prose_with_a_trailing_comma_is_read() {
    let parsed = read(fixture!("hand_written/json_in_prose.txt"));
    assert_eq!(parsed.format, Format::Json);
    assert_eq!(parsed.gaps, ["verify_user in auth/service.py"]);
    assert_eq!(parsed.is_sufficient, Some(false));
    assert_eq!(parsed.useful_chunk_ids, ["auth/service.py#0", "[2]"]);
    assert!(parsed
        .warnings
        .iter()
        .any(|w| w.contains("trailing commas")));
    assert_eq!(
        resolve_chunk_ids(
            &parsed.useful_chunk_ids,
            &["auth/service.py#0", "auth/session.py#1"]
        ),
        ["auth/service.py#0", "auth/session.py#1"]
    );
}
