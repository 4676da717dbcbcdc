use super::*;

fn gaps(text: &str) -> Vec<String> {
    parse_answer_and_gaps(text).gaps
}

#[track_caller]
fn assert_gaps(text: &str, expected: &[&str]) {
    let parsed = parse_answer_and_gaps(text);
    assert_eq!(parsed.gaps, expected, "{text:?} -> {parsed:#?}");
}

#[test]
fn seed_format_is_read() {
    let parsed = parse_answer_and_gaps(
        "ANSWER:\nlogin calls verify_user, then create_session.\n\nMISSING (or \"NONE\" if nothing \
         needed):\n- verify_user in auth/service.py\n- SessionStore in auth/session.py\n",
    );
    assert_eq!(parsed.format, Format::Sections);
    assert_eq!(
        parsed.answer.as_deref(),
        Some("login calls verify_user, then create_session.")
    );
    assert_eq!(
        parsed.gaps,
        [
            "verify_user in auth/service.py",
            "SessionStore in auth/session.py"
        ]
    );
    assert!(parsed.useful_chunk_ids.is_empty());
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
}

#[test]
fn headers_match_in_any_case() {
    for (answer, missing) in [
        ("ANSWER:", "MISSING:"),
        ("answer:", "missing:"),
        ("Answer:", "Missing:"),
        ("aNsWeR:", "mIsSiNg:"),
        ("Answer", "Missing"),
        ("ANSWER :", "MISSING :"),
        ("Final answer:", "Missing context:"),
        ("Answer：", "Gaps:"),
    ] {
        let text = format!("{answer}\nIt hashes.\n{missing}\n- verify_user in auth.py");
        let parsed = parse_answer_and_gaps(&text);
        assert_eq!(parsed.format, Format::Sections, "{text}");
        assert_eq!(parsed.answer.as_deref(), Some("It hashes."), "{text}");
        assert_eq!(parsed.gaps, ["verify_user in auth.py"], "{text}");
    }
}

#[test]
fn markdown_headers_are_read() {
    for (answer, missing) in [
        ("**ANSWER:**", "**MISSING:**"),
        ("**Answer**:", "**Missing**:"),
        ("## Answer", "## Missing"),
        ("### Answer", "### Missing context"),
        ("# ANSWER:", "# MISSING (or \"NONE\" if nothing needed):"),
        ("> **Answer:**", "__Missing:__"),
    ] {
        let text = format!("{answer}\nIt hashes.\n\n{missing}\n* `verify_user` in auth.py");
        let parsed = parse_answer_and_gaps(&text);
        assert_eq!(parsed.answer.as_deref(), Some("It hashes."), "{text}");
        assert_eq!(parsed.gaps, ["`verify_user` in auth.py"], "{text}");
    }
}

#[test]
fn text_on_the_header_line_is_read() {
    let parsed = parse_answer_and_gaps("ANSWER: It hashes.\nMISSING: verify_user in auth.py");
    assert_eq!(parsed.answer.as_deref(), Some("It hashes."));
    assert_eq!(parsed.gaps, ["verify_user in auth.py"]);
    assert_gaps("**MISSING:** class Session", &["class Session"]);
}

#[test]
fn header_line_items_split_on_semicolons_and_specific_commas() {
    assert_gaps(
        "MISSING: verify_user in auth.py; class Session",
        &["verify_user in auth.py", "class Session"],
    );
    assert_gaps(
        "MISSING: verify_user in auth.py, class Session, src/db.rs",
        &["verify_user in auth.py", "class Session", "src/db.rs"],
    );
    assert_gaps(
        "MISSING: how users, roles and groups relate",
        &["how users, roles and groups relate"],
    );
}

#[test]
fn bullets_and_numbering_are_stripped() {
    for marker in ["-", "*", "•", "+", "1.", "1)", "(1)", "[1]", "–"] {
        let text = format!("MISSING:\n{marker} verify_user in auth.py\n{marker} class Session");
        assert_gaps(&text, &["verify_user in auth.py", "class Session"]);
    }
    assert_gaps(
        "MISSING:\n1. verify_user\n2. hash_password\n10. create_session",
        &["verify_user", "hash_password", "create_session"],
    );
}

#[test]
fn quotes_backticks_and_bold_around_items_are_removed() {
    assert_gaps(
        "MISSING:\n- \"verify_user in auth.py\"\n- `hash_password`\n- 'SessionStore'\n- \
         **create_session**\n- “token_hex”\n- ```config.yaml```",
        &[
            "verify_user in auth.py",
            "hash_password",
            "SessionStore",
            "create_session",
            "token_hex",
            "config.yaml",
        ],
    );
    // Quotes inside an item stay.
    assert_gaps("MISSING:\n- `a` in `b.py`", &["`a` in `b.py`"]);
}

#[test]
fn none_variants_mean_no_gaps() {
    for none in [
        "NONE",
        "None",
        "None.",
        "none",
        "(none)",
        "\"NONE\"",
        "n/a",
        "N/A",
        "nothing",
        "Nothing.",
        "no missing context",
        "No additional context is needed.",
        "- None",
        "* NONE",
        "1. None.",
        "None. The context is sufficient to answer the question.",
    ] {
        for text in [
            format!("ANSWER: ok\nMISSING: {none}"),
            format!("ANSWER: ok\nMISSING:\n{none}"),
        ] {
            let parsed = parse_answer_and_gaps(&text);
            assert!(parsed.gaps.is_empty(), "{text:?} -> {:?}", parsed.gaps);
            assert_eq!(parsed.format, Format::Sections);
            assert_eq!(parsed.answer.as_deref(), Some("ok"));
        }
    }
}

#[test]
fn none_first_ignores_what_follows_with_a_warning() {
    let parsed = parse_answer_and_gaps("ANSWER: ok\nMISSING: NONE\nThe code is complete.");
    assert!(parsed.gaps.is_empty());
    assert!(parsed.warnings.iter().any(|w| w.contains("says none")));
    // Prose after a blank line is not an item either, and needs no warning.
    let parsed = parse_answer_and_gaps("ANSWER: ok\nMISSING:\nNone.\n\nI hope this helps!");
    assert!(parsed.gaps.is_empty());
}

#[test]
fn missing_section_absent_means_no_gaps() {
    let parsed = parse_answer_and_gaps("ANSWER:\nverify_user compares hashes.");
    assert_eq!(parsed.format, Format::Sections);
    assert_eq!(
        parsed.answer.as_deref(),
        Some("verify_user compares hashes.")
    );
    assert!(parsed.gaps.is_empty());
    assert!(parsed.warnings.iter().any(|w| w.contains("no MISSING")));
}

#[test]
fn answer_section_absent_takes_the_prose_before() {
    let parsed = parse_answer_and_gaps("It compares hashes.\n\nMISSING:\n- verify_user in auth.py");
    assert_eq!(parsed.answer.as_deref(), Some("It compares hashes."));
    assert_eq!(parsed.gaps, ["verify_user in auth.py"]);
    let parsed = parse_answer_and_gaps("MISSING:\n- verify_user in auth.py");
    assert_eq!(parsed.answer, None);
}

#[test]
fn prose_before_and_after_is_ignored() {
    let parsed = parse_answer_and_gaps(
        "Sure! Here is my reply.\n\nANSWER:\nIt hashes.\n\nMISSING:\n- verify_user in \
         auth.py\n\nI hope this helps! Let me know if you need more.",
    );
    assert_eq!(parsed.answer.as_deref(), Some("It hashes."));
    assert_eq!(parsed.gaps, ["verify_user in auth.py"]);
    // Without bullets, items end at the first blank line.
    assert_gaps(
        "ANSWER: x\nMISSING:\nverify_user in auth.py\nclass Session\n\nHope this helps.",
        &["verify_user in auth.py", "class Session"],
    );
    // With bullets, other lines are prose.
    let parsed = parse_answer_and_gaps(
        "ANSWER: x\nMISSING: I would need the following:\n- verify_user\nwhich checks the \
         password\n- class Session",
    );
    assert_eq!(parsed.gaps, ["verify_user", "class Session"]);
    assert!(parsed.warnings.iter().any(|w| w.contains("non-list")));
}

#[test]
fn other_headers_end_the_missing_section_but_not_the_answer() {
    let parsed = parse_answer_and_gaps(
        "ANSWER:\nIt hashes.\nNOTE: only bcrypt.\nMISSING:\n- verify_user\n\nCONFIDENCE: \
         low\nsomething else",
    );
    assert_eq!(
        parsed.answer.as_deref(),
        Some("It hashes.\nNOTE: only bcrypt.")
    );
    assert_eq!(parsed.gaps, ["verify_user"]);
    let parsed = parse_answer_and_gaps("MISSING:\n- verify_user\n## Notes\n- not a gap");
    assert_eq!(parsed.gaps, ["verify_user"]);
}

#[test]
fn sections_in_reverse_order_and_repeated_blocks_are_read() {
    let parsed = parse_answer_and_gaps("MISSING:\n- verify_user\n\nANSWER:\nIt hashes.");
    assert_eq!(parsed.answer.as_deref(), Some("It hashes."));
    assert_eq!(parsed.gaps, ["verify_user"]);
    let block = "ANSWER:\nIt hashes.\nMISSING:\n- verify_user\n- class Session\n";
    let parsed = parse_answer_and_gaps(&block.repeat(3));
    assert_eq!(parsed.answer.as_deref(), Some("It hashes."));
    assert_eq!(parsed.gaps, ["verify_user", "class Session"]);
}

#[test]
fn inline_headers_are_split() {
    let parsed = parse_answer_and_gaps("ANSWER: It hashes. MISSING: NONE");
    assert_eq!(parsed.answer.as_deref(), Some("It hashes."));
    assert!(parsed.gaps.is_empty());
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let parsed = parse_answer_and_gaps("Sure. ANSWER: It hashes. MISSING: verify_user in auth.py");
    assert_eq!(parsed.answer.as_deref(), Some("It hashes."));
    assert_eq!(parsed.gaps, ["verify_user in auth.py"]);
    // Lower-case words inside prose are no headers.
    let parsed = parse_answer_and_gaps("The answer: nothing is missing: all good.");
    assert_eq!(parsed.format, Format::Unparsed);
}

#[test]
fn words_that_merely_start_like_headers_are_prose() {
    let parsed = parse_answer_and_gaps(
        "ANSWER:\nMissing values are skipped.\nAnswers are cached.\nMISSING:\n- cache in \
         cache.py",
    );
    assert_eq!(
        parsed.answer.as_deref(),
        Some("Missing values are skipped.\nAnswers are cached.")
    );
    assert_eq!(parsed.gaps, ["cache in cache.py"]);
}

#[test]
fn repeated_items_are_deduplicated_case_insensitively_in_order() {
    assert_gaps(
        "MISSING:\n- verify_user in auth.py\n- class Session\n- Verify_User in AUTH.py\n- \
         `verify_user in auth.py`\n- class session.\n- src/db.rs",
        &["verify_user in auth.py", "class Session", "src/db.rs"],
    );
}

#[test]
fn long_items_and_long_lists_are_capped() {
    let long = "x".repeat(500);
    let parsed = parse_answer_and_gaps(&format!("MISSING:\n- {long}\n- y"));
    assert_eq!(parsed.gaps[0].chars().count(), MAX_GAP_CHARS);
    assert_eq!(parsed.gaps[1], "y");
    assert!(parsed.warnings.iter().any(|w| w.contains("cut to 200")));

    let list: String = (0..25).map(|i| format!("- symbol_{i}\n")).collect();
    let parsed = parse_answer_and_gaps(&format!("MISSING:\n{list}"));
    assert_eq!(parsed.gaps.len(), MAX_GAPS);
    assert_eq!(parsed.gaps[9], "symbol_9");
    assert!(parsed
        .warnings
        .iter()
        .any(|w| w.contains("15 gap(s) beyond")));
}

#[test]
fn empty_lines_and_empty_items_are_skipped() {
    assert_gaps(
        "MISSING:\n\n\n- verify_user\n-\n*   \n\n- class Session\n\n",
        &["verify_user", "class Session"],
    );
    let parsed = parse_answer_and_gaps("ANSWER: ok\nMISSING:\n\n");
    assert!(parsed.gaps.is_empty());
}

#[test]
fn echoed_template_items_are_dropped() {
    let parsed = parse_answer_and_gaps(
        "ANSWER:\n[Your answer here]\n\nMISSING (or \"NONE\" if nothing needed):\n- \
         function_name in path/to/file.py\n- ClassName in some/module.py\n- the file that \
         handles X\n- verify_user in auth.py",
    );
    assert_eq!(parsed.answer, None);
    assert_eq!(parsed.gaps, ["verify_user in auth.py"]);
    assert!(parsed.warnings.iter().any(|w| w.contains("placeholder")));
    assert!(parsed
        .warnings
        .iter()
        .any(|w| w.contains("3 item(s) repeating")));
    // Variations on the examples' made-up paths are echoes too.
    assert_gaps(
        "MISSING:\n- file_name in path/to/file.py\n- className in some/module.py",
        &[],
    );
}

#[test]
fn repeated_answer_headers_skip_the_placeholder() {
    let parsed = parse_answer_and_gaps(
        "## Answer\n\n[Your answer here]\n\n## Answer\n\nIt hashes.\n\nMISSING: NONE",
    );
    assert_eq!(parsed.answer.as_deref(), Some("It hashes."));
}

#[test]
fn question_echoes_are_dropped_on_request() {
    let mut parsed = parse_answer_and_gaps("MISSING:\n- How does login work?\n- verify_user");
    assert_eq!(parsed.drop_question_echo("  how does LOGIN work "), 1);
    assert_eq!(parsed.gaps, ["verify_user"]);
    assert_eq!(parsed.drop_question_echo("other"), 0);
}

#[test]
fn json_reply_is_read() {
    let parsed = parse_answer_and_gaps(
        r#"{"answer": "It hashes.", "is_sufficient": false, "missing": ["verify_user in auth.py", "class Session"], "useful_chunk_ids": ["auth.py#0", "auth.py#0", 2]}"#,
    );
    assert_eq!(parsed.format, Format::Json);
    assert_eq!(parsed.answer.as_deref(), Some("It hashes."));
    assert_eq!(parsed.gaps, ["verify_user in auth.py", "class Session"]);
    assert_eq!(parsed.useful_chunk_ids, ["auth.py#0", "2"]);
    assert_eq!(parsed.is_sufficient, Some(false));
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
}

#[test]
fn json_in_fences_or_prose_is_found() {
    for text in [
        "```json\n{\"answer\": \"ok\", \"missing\": [\"verify_user\"]}\n```",
        "```\n{\"answer\": \"ok\", \"missing\": [\"verify_user\"]}\n```\nDone.",
        "Here is the JSON you asked for: {\"answer\": \"ok\", \"missing\": [\"verify_user\"]} \
         Hope it helps {not json}.",
        "Code: `{}` and {\"x\": 1} then {\"Answer\": \"ok\", \"Missing\": [\"verify_user\"]}",
        "{\"result\": {\"answer\": \"ok\", \"missing\": [\"verify_user\"]}}",
    ] {
        let parsed = parse_answer_and_gaps(text);
        assert_eq!(parsed.format, Format::Json, "{text}");
        assert_eq!(parsed.answer.as_deref(), Some("ok"), "{text}");
        assert_eq!(parsed.gaps, ["verify_user"], "{text}");
    }
}

#[test]
fn json_without_known_fields_is_not_a_reply() {
    let parsed = parse_answer_and_gaps("return {\"id\": \"0\", \"username\": \"x\"}");
    assert_eq!(parsed.format, Format::Unparsed);
}

#[test]
fn json_none_variants_and_shapes_are_tolerated() {
    for missing in [
        "[]",
        "null",
        "false",
        "[\"NONE\"]",
        "\"NONE\"",
        "\"n/a\"",
        "[\"None.\", \"\"]",
    ] {
        let text =
            format!("{{\"answer\": \"ok\", \"is_sufficient\": true, \"missing\": {missing}}}");
        let parsed = parse_answer_and_gaps(&text);
        assert_eq!(parsed.format, Format::Json, "{text}");
        assert!(parsed.gaps.is_empty(), "{text} -> {:?}", parsed.gaps);
    }
    let parsed = parse_answer_and_gaps(
        r#"{"answer": "ok", "missing": "verify_user in auth.py\n- class Session", "is_sufficient": "no"}"#,
    );
    assert_eq!(parsed.gaps, ["verify_user in auth.py", "class Session"]);
    assert_eq!(parsed.is_sufficient, Some(false));
    let parsed = parse_answer_and_gaps(
        r#"{"answer": "ok", "missing": [{"symbol": "verify_user", "file": "auth.py"}, 3, "- `x_y`"]}"#,
    );
    assert_eq!(parsed.gaps, ["verify_user in auth.py", "x_y"]);
    assert!(parsed.warnings.iter().any(|w| w.contains("not text")));
}

#[test]
fn json_contradictions_are_reported() {
    let parsed =
        parse_answer_and_gaps(r#"{"answer": "ok", "is_sufficient": true, "missing": ["x_y"]}"#);
    assert_eq!(parsed.gaps, ["x_y"]);
    assert!(parsed
        .warnings
        .iter()
        .any(|w| w.contains("is_sufficient is true")));
    let parsed =
        parse_answer_and_gaps(r#"{"answer": "ok", "is_sufficient": false, "missing": []}"#);
    assert!(parsed
        .warnings
        .iter()
        .any(|w| w.contains("is_sufficient is false")));
    let parsed = parse_answer_and_gaps(r#"{"answer": "ok"}"#);
    assert!(parsed.warnings.iter().any(|w| w.contains("no \"missing\"")));
}

#[test]
fn broken_json_is_repaired() {
    let parsed =
        parse_answer_and_gaps(r#"{"answer": "ok", "missing": ["verify_user", "class Session",],}"#);
    assert_eq!(parsed.format, Format::Json);
    assert_eq!(parsed.gaps, ["verify_user", "class Session"]);
    assert!(parsed
        .warnings
        .iter()
        .any(|w| w.contains("trailing commas")));

    let parsed = parse_answer_and_gaps(r#"{"answer": "It hash"#);
    assert_eq!(parsed.format, Format::Json);
    assert_eq!(parsed.answer.as_deref(), Some("It hash"));
    assert!(parsed.warnings.iter().any(|w| w.contains("cut short")));

    let parsed =
        parse_answer_and_gaps(r#"```json\n{"answer": "ok", "missing": ["verify_user", "cla"#);
    assert_eq!(parsed.gaps, ["verify_user", "cla"]);
}

#[test]
fn json_placeholders_are_dropped() {
    let parsed = parse_answer_and_gaps(
        r#"{"answer": "<your answer>", "is_sufficient": true, "missing": ["<one missing item per string>"], "useful_chunk_ids": ["<id of a chunk you used>"]}"#,
    );
    assert_eq!(parsed.answer, None);
    assert!(parsed.gaps.is_empty());
    assert!(parsed.useful_chunk_ids.is_empty());
}

#[test]
fn chunk_ids_are_bounded() {
    let ids: Vec<String> = (0..80).map(|i| format!("\"d#{i}\"")).collect();
    let long = "x".repeat(MAX_CHUNK_ID_BYTES + 1);
    let text = format!(
        "{{\"answer\": \"ok\", \"missing\": [], \"useful_chunk_ids\": [\"{long}\", {}]}}",
        ids.join(", ")
    );
    let parsed = parse_answer_and_gaps(&text);
    assert_eq!(parsed.useful_chunk_ids.len(), MAX_CHUNK_IDS);
    assert_eq!(parsed.useful_chunk_ids[0], "d#0");
    assert_eq!(parsed.warnings.len(), 2, "{:?}", parsed.warnings);
}

#[test]
fn unparseable_replies_give_no_gaps_and_a_warning() {
    for text in [
        "1. login calls verify_user.\n2. verify_user checks the password.\n3. SessionStore \
         stores tokens.",
        "I am not sure what you mean.",
        "{ broken",
        "```python\ndef login(): pass\n```",
    ] {
        let parsed = parse_answer_and_gaps(text);
        assert_eq!(parsed.format, Format::Unparsed, "{text}");
        assert!(parsed.gaps.is_empty());
        assert_eq!(parsed.answer.as_deref(), Some(text.trim()));
        assert_eq!(parsed.warnings.len(), 1);
    }
    for text in ["", "   \n\t"] {
        let parsed = parse_answer_and_gaps(text);
        assert_eq!(parsed.format, Format::Unparsed);
        assert_eq!(parsed.answer, None);
        assert_eq!(parsed.warnings, ["empty reply"]);
    }
}

#[test]
fn over_long_replies_are_read_from_their_start() {
    let text = format!(
        "ANSWER: ok\nMISSING:\n- x_y\n{}",
        "é".repeat(MAX_REPLY_BYTES)
    );
    let parsed = parse_answer_and_gaps(&text);
    assert_eq!(parsed.gaps.first().map(String::as_str), Some("x_y"));
    assert!(parsed.warnings.iter().any(|w| w.contains("longer than")));
}

#[test]
fn gaps_helper_reads_bare_lists() {
    assert_eq!(gaps("Missing:\n- a_b"), ["a_b"]);
}
