use super::*;

fn chunks() -> Vec<ContextChunk<'static>> {
    vec![
        ContextChunk::new("auth.py#0", "def login():\n    verify_user()\n"),
        ContextChunk::new("session.py#1", "class SessionStore: ..."),
    ]
}

#[test]
fn sections_prompt_numbers_chunks_with_their_ids() {
    let prompt = answer_and_gaps_prompt("  How does login work? ", &chunks());
    assert!(prompt.system.contains("codebase"));
    // The context first, so a model server can reuse a previous prompt's prefix.
    assert!(prompt
        .user
        .starts_with("## Available Context\n\n[1] (id: auth.py#0)"));
    assert!(prompt
        .user
        .contains("\n## Question\nHow does login work?\n\n## Instructions\n"));
    assert!(prompt.user.contains(
        "[1] (id: auth.py#0)\ndef login():\n    verify_user()\n\n[2] (id: session.py#1)"
    ));
    assert!(prompt.user.contains("ANSWER:\n[Your answer here]"));
    assert!(prompt
        .user
        .contains("MISSING (or \"NONE\" if nothing needed):"));
    for example in SECTIONS_EXAMPLE_GAPS {
        assert!(prompt.user.contains(&format!("- {example}")));
    }
    assert!(prompt.user.contains(SECTIONS_ANSWER_PLACEHOLDER));
}

#[test]
fn json_prompt_asks_for_the_four_fields() {
    let prompt = answer_and_gaps_json_prompt("How does login work?", &chunks());
    assert!(prompt.user.contains("[2] (id: session.py#1)"));
    for field in [
        "\"answer\"",
        "\"is_sufficient\"",
        "\"missing\"",
        "\"useful_chunk_ids\"",
    ] {
        assert!(prompt.user.contains(field), "{field}");
    }
    for placeholder in JSON_PLACEHOLDERS {
        assert!(prompt.user.contains(placeholder), "{placeholder}");
    }
    assert!(!prompt.user.contains("MISSING ("));
}

#[test]
fn the_json_template_reads_as_an_empty_reply() {
    // A model that echoes the template gets no answer and no gaps out of it.
    let prompt = answer_and_gaps_json_prompt("q", &chunks());
    let template = &prompt.user[prompt.user.rfind('{').unwrap_or(0)..];
    let parsed = crate::parse_answer_and_gaps(template);
    assert_eq!(parsed.format, crate::Format::Json);
    assert_eq!(parsed.answer, None);
    assert!(parsed.gaps.is_empty());
    assert!(parsed.useful_chunk_ids.is_empty());
}

#[test]
fn empty_context_is_said() {
    let prompt = answer_and_gaps_prompt("q", &[]);
    assert!(prompt.user.contains("(no context was retrieved)"));
}
