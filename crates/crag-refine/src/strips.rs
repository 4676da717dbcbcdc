//! Decomposition of documents into strips of a few sentences (CRAG knowledge refinement).

/// A run of consecutive sentences of a source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strip {
    /// The strip's text, `source[start..end]`.
    pub text: String,
    /// Byte offset of the first character in the source text.
    pub start: usize,
    /// Byte offset just past the last character in the source text.
    pub end: usize,
}

/// Lowercase words that end with a dot without ending the sentence.
const ABBREVIATIONS: &[&str] = &[
    "al", "approx", "apr", "aug", "ca", "cf", "ch", "co", "corp", "dec", "dept", "dr", "e.g", "eq",
    "eqs", "est", "feb", "fig", "figs", "i.e", "inc", "jan", "jr", "jul", "jun", "ltd", "mar",
    "mr", "mrs", "ms", "no", "nos", "nov", "oct", "p", "pp", "prof", "ref", "resp", "sec", "sep",
    "sept", "sr", "st", "viz", "vol", "vs",
];

/// Characters that may follow a sentence terminator and still belong to the sentence.
fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | ')' | ']' | '}' | '\u{201D}' | '\u{2019}' | '\u{BB}' | '\u{300D}' | '\u{300F}'
    )
}

/// Terminators of CJK text, which needs no whitespace after them.
fn is_wide_terminator(c: char) -> bool {
    matches!(c, '\u{3002}' | '\u{FF01}' | '\u{FF1F}')
}

fn is_terminator(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '\u{2026}') || is_wide_terminator(c)
}

/// A sentence as a byte range; `paragraph_end` when a blank line or the end of text follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sentence {
    start: usize,
    end: usize,
    paragraph_end: bool,
}

/// Splits text into sentences, trimmed of surrounding whitespace.
///
/// A sentence ends at `.`, `!`, `?` or `…` (with any closing quotes or brackets) followed by
/// whitespace or the end of the text, at `。！？`, and at a blank line. A dot does not end a
/// sentence after a known abbreviation ("e.g.", "Dr.", "Fig."), after a dotted acronym
/// ("U.S."), or when the next word starts with a lowercase letter; decimals ("3.5") never
/// split because no whitespace follows the dot.
fn sentences(text: &str) -> Vec<Sentence> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out: Vec<Sentence> = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = 0;
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        if c.is_whitespace() {
            if c == '\n' && blank_line_follows(&chars[i + 1..]) {
                match start.take() {
                    Some(s) => out.push(Sentence {
                        start: s,
                        end,
                        paragraph_end: true,
                    }),
                    None => {
                        if let Some(last) = out.last_mut() {
                            last.paragraph_end = true;
                        }
                    }
                }
            }
            i += 1;
            continue;
        }
        let s = *start.get_or_insert(at);
        end = at + c.len_utf8();
        i += 1;
        if !is_terminator(c) {
            continue;
        }
        while let Some(&(at, next)) = chars.get(i) {
            if !(is_terminator(next) || is_closer(next)) {
                break;
            }
            end = at + next.len_utf8();
            i += 1;
        }
        let next = chars.get(i).map(|&(_, c)| c);
        let spaced = next.is_none_or(char::is_whitespace);
        let boundary = is_wide_terminator(c)
            || (spaced && !(c == '.' && dot_continues(text, s, at, &chars[i..])));
        if boundary {
            out.push(Sentence {
                start: s,
                end,
                paragraph_end: false,
            });
            start = None;
        }
    }
    if let Some(s) = start {
        out.push(Sentence {
            start: s,
            end,
            paragraph_end: true,
        });
    }
    if let Some(last) = out.last_mut() {
        last.paragraph_end = true;
    }
    out
}

/// Whether the characters after a newline contain another newline before any non-space.
fn blank_line_follows(rest: &[(usize, char)]) -> bool {
    rest.iter()
        .take_while(|&&(_, c)| c.is_whitespace())
        .any(|&(_, c)| c == '\n')
}

/// Whether the dot at byte `dot` (in the sentence starting at `sentence_start`) is part of an
/// abbreviation rather than the end of the sentence.
fn dot_continues(text: &str, sentence_start: usize, dot: usize, rest: &[(usize, char)]) -> bool {
    let next_word_lowercase = rest
        .iter()
        .find(|&&(_, c)| !c.is_whitespace())
        .is_some_and(|&(_, c)| c.is_lowercase());
    if next_word_lowercase {
        return true;
    }
    let before = &text[sentence_start..dot];
    let word = before
        .rsplit(char::is_whitespace)
        .next()
        .unwrap_or("")
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    if word.is_empty() {
        return false;
    }
    ABBREVIATIONS.binary_search(&word.as_str()).is_ok() || is_dotted_acronym(&word)
}

/// "u.s", "a.m", "ph.d": dot-separated parts of at most two letters each.
fn is_dotted_acronym(word: &str) -> bool {
    word.contains('.')
        && word
            .split('.')
            .all(|p| (1..=2).contains(&p.chars().count()) && p.chars().all(char::is_alphabetic))
}

/// Splits text into strips of `sentences_per_strip` consecutive sentences (0 counts as 1).
///
/// Sentences end at `.`, `!`, `?` or `…` followed by whitespace (closing quotes and brackets
/// stay with their sentence), at `。！？`, and at blank lines; abbreviations ("e.g.", "Dr.",
/// "U.S."), a dot followed by a lowercase word, and decimals ("3.5") do not split. A strip
/// never spans a blank line, so the last strip of a paragraph may be shorter. Strips are
/// trimmed of surrounding whitespace, and `start..end` is always a valid range of `text` on
/// character boundaries. Whitespace-only text has no strips.
pub fn split_strips(text: &str, sentences_per_strip: usize) -> Vec<Strip> {
    let per_strip = sentences_per_strip.max(1);
    let mut strips = Vec::new();
    let mut group: Option<(usize, usize)> = None;
    let mut count = 0;
    for sentence in sentences(text) {
        let (start, _) = *group.get_or_insert((sentence.start, sentence.end));
        group = Some((start, sentence.end));
        count += 1;
        if count == per_strip || sentence.paragraph_end {
            strips.push(Strip {
                text: text[start..sentence.end].to_owned(),
                start,
                end: sentence.end,
            });
            group = None;
            count = 0;
        }
    }
    strips
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(text: &str, n: usize) -> Vec<String> {
        split_strips(text, n).into_iter().map(|s| s.text).collect()
    }

    #[test]
    fn abbreviations_are_sorted() {
        assert!(
            ABBREVIATIONS.windows(2).all(|w| w[0] < w[1]),
            "keep ABBREVIATIONS sorted"
        );
    }

    #[test]
    fn sentences_split_on_terminators_and_blank_lines() {
        let text = "  First one. Second one!  Third one?\nStill third? Fourth.\n\n  Fifth  \n";
        assert_eq!(
            texts(text, 1),
            [
                "First one.",
                "Second one!",
                "Third one?",
                "Still third?",
                "Fourth.",
                "Fifth"
            ]
        );
        assert_eq!(
            texts(text, 3),
            [
                "First one. Second one!  Third one?",
                "Still third? Fourth.",
                "Fifth"
            ]
        );
        assert_eq!(texts("a\n\n\n b", 5), ["a", "b"]);
    }

    #[test]
    fn abbreviations_decimals_and_quotes_do_not_split() {
        let text = "Use a crate, e.g. serde. It costs 3.5 ms on avg. and Dr. Smith agrees. \
                    He said \"stop.\" Then the U.S. Army left... Done";
        assert_eq!(
            texts(text, 1),
            [
                "Use a crate, e.g. serde.",
                "It costs 3.5 ms on avg. and Dr. Smith agrees.",
                "He said \"stop.\"",
                "Then the U.S. Army left...",
                "Done"
            ]
        );
    }

    #[test]
    fn wide_terminators_and_multibyte_text() {
        let text = "東京は日本の首都です。大阪は大きい！ Ünïcödé ends here. 🎉 Party?";
        assert_eq!(
            texts(text, 1),
            [
                "東京は日本の首都です。",
                "大阪は大きい！",
                "Ünïcödé ends here.",
                "🎉 Party?"
            ]
        );
    }

    #[test]
    fn strips_map_back_to_the_source() {
        let text = "One. Two. Three. Four. Five.";
        let strips = split_strips(text, 2);
        assert_eq!(strips.len(), 3);
        for s in &strips {
            assert_eq!(&text[s.start..s.end], s.text);
        }
        assert_eq!(strips[2].text, "Five.");
        assert_eq!(texts(text, 0), texts(text, 1));
        assert!(split_strips("", 3).is_empty());
        assert!(split_strips(" \n\n\t ", 3).is_empty());
    }

    proptest! {
        #[test]
        fn strips_are_valid_ordered_ranges(text in "\\PC{0,200}", n in 0usize..5) {
            let strips = split_strips(&text, n);
            let mut last_end = 0;
            for s in &strips {
                prop_assert!(s.start < s.end && s.start >= last_end);
                prop_assert_eq!(text.get(s.start..s.end), Some(s.text.as_str()));
                prop_assert_eq!(s.text.trim(), s.text.as_str());
                last_end = s.end;
            }
            // Every non-whitespace character is in some strip.
            let covered: usize = strips.iter().map(|s| s.text.chars().filter(|c| !c.is_whitespace()).count()).sum();
            prop_assert_eq!(covered, text.chars().filter(|c| !c.is_whitespace()).count());
        }

        #[test]
        fn never_panics_on_sentence_like_text(
            text in "([a-zA-Zé東🎉 .!?\"')\n]|e\\.g\\.|3\\.5|U\\.S\\.){0,80}",
            n in 0usize..4,
        ) {
            for s in split_strips(&text, n) {
                prop_assert_eq!(&text[s.start..s.end], s.text.as_str());
            }
        }
    }
}
