//! Knowledge refinement by a language model, the pure half: the prompt that shows the model
//! numbered strips and asks which help answer the question (the filter of decompose, filter,
//! recompose), and the tolerant reading of its answer. Small models answer in prose, repeat
//! numbers, or name ones that were never shown: only numbers of shown strips count, each
//! once; an answer with none of them and no "none" is unreadable.

/// The instructions of the selection prompt.
pub const SELECTION_SYSTEM_PROMPT: &str = "You select the passages that help answer a question. \
     Answer with the numbers of the helpful passages, separated by commas (for example: 1, 3), \
     or NONE if none helps. Answer with the numbers only.";

/// Longest strip text shown to the model, in characters (a longer one is cut at a word).
pub const MAX_SHOWN_CHARS: usize = 600;

/// The user message of the selection prompt: the question, then the strips numbered from 1.
pub fn selection_prompt(query: &str, strips: &[&str]) -> String {
    let mut out = format!("Question: {}\n\nPassages:\n", query.trim());
    for (i, strip) in strips.iter().enumerate() {
        let text = one_line(strip);
        out.push_str(&format!(
            "[{}] {}\n",
            i + 1,
            shorten(&text, MAX_SHOWN_CHARS)
        ));
    }
    out.push_str("\nWhich passages help answer the question?");
    out
}

/// What the model's answer selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// These strips (0-based indexes into the shown strips), ascending, each once.
    Strips(Vec<usize>),
    /// The model says none helps.
    NoneHelps,
    /// The answer names no shown strip and does not say none: not an answer.
    Unreadable,
}

/// Reads the model's `answer` to a prompt that showed `shown` strips. Numbers outside
/// `1..=shown` are ignored; "none" (as a word, any case) counts only when no shown number is
/// named.
pub fn parse_selection(answer: &str, shown: usize) -> Selection {
    let mut picked: Vec<usize> = Vec::new();
    let mut number = String::new();
    let mut push = |digits: &mut String| {
        if let Ok(n) = digits.parse::<usize>() {
            if (1..=shown).contains(&n) && !picked.contains(&(n - 1)) {
                picked.push(n - 1);
            }
        }
        digits.clear();
    };
    for c in answer.chars() {
        if c.is_ascii_digit() {
            number.push(c);
        } else if !number.is_empty() {
            push(&mut number);
        }
    }
    if !number.is_empty() {
        push(&mut number);
    }
    if !picked.is_empty() {
        picked.sort_unstable();
        return Selection::Strips(picked);
    }
    let says_none = answer
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w.eq_ignore_ascii_case("none"));
    if says_none {
        Selection::NoneHelps
    } else {
        Selection::Unreadable
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > max / 2 => cut[..i].to_owned(),
        _ => cut,
    };
    format!("{cut} …")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_prompt_numbers_the_strips_on_one_line_each() {
        let p = selection_prompt(" what is rust? ", &["Rust is a\nlanguage.", "Bread rises."]);
        assert!(p.starts_with("Question: what is rust?\n"), "{p}");
        assert!(
            p.contains("[1] Rust is a language.\n[2] Bread rises.\n"),
            "{p}"
        );
        let long = "word ".repeat(400);
        let p = selection_prompt("q", &[&long]);
        assert!(p.len() < MAX_SHOWN_CHARS + 200, "{}", p.len());
        assert!(p.contains(" …\n"));
    }

    #[test]
    fn numbers_of_shown_strips_are_read_from_any_prose() {
        let strips = |v: &[usize]| Selection::Strips(v.to_vec());
        assert_eq!(parse_selection("1, 3", 4), strips(&[0, 2]));
        assert_eq!(parse_selection("[3] and [1]", 4), strips(&[0, 2]));
        assert_eq!(
            parse_selection("Passages 2 and 2 help; 9 does not exist", 4),
            strips(&[1])
        );
        assert_eq!(parse_selection("4", 4), strips(&[3]));
        assert_eq!(parse_selection("- 1\n- 2\n", 4), strips(&[0, 1]));
        // A named passage outweighs a "none" in the same answer.
        assert_eq!(parse_selection("none except 2", 4), strips(&[1]));
    }

    #[test]
    fn none_and_nonsense_are_told_apart() {
        assert_eq!(parse_selection("NONE", 3), Selection::NoneHelps);
        assert_eq!(parse_selection("None of them.", 3), Selection::NoneHelps);
        assert_eq!(parse_selection("0, 7", 3), Selection::Unreadable);
        assert_eq!(parse_selection("", 3), Selection::Unreadable);
        assert_eq!(
            parse_selection("The passages discuss bread.", 3),
            Selection::Unreadable
        );
        assert_eq!(parse_selection("nonexistent", 3), Selection::Unreadable);
        assert_eq!(parse_selection("1", 0), Selection::Unreadable);
        assert_eq!(
            parse_selection("99999999999999999999999", 3),
            Selection::Unreadable
        );
    }

    proptest! {
        #[test]
        fn any_answer_selects_only_shown_strips_once_in_order(answer in ".{0,200}", shown in 0usize..20) {
            if let Selection::Strips(picked) = parse_selection(&answer, shown) {
                prop_assert!(!picked.is_empty());
                prop_assert!(picked.iter().all(|&i| i < shown));
                prop_assert!(picked.windows(2).all(|w| w[0] < w[1]));
            }
        }
    }
}
