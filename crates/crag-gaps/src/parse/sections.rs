//! `ANSWER:` / `MISSING:` sections, as the sections prompt asks for them.

use super::{is_answer_placeholder, is_none_marker};
use crate::classify::{classify_gap, GapQuery};
use crate::clean::{clean_item, is_list_item, strip_list_marker};

/// Header words of the answer section, longest first.
const ANSWER_WORDS: &[&str] = &["final answer", "answer"];
/// Header words of the missing section, longest first.
const MISSING_WORDS: &[&str] = &[
    "missing information",
    "missing context",
    "missing items",
    "missing code",
    "missing",
    "gaps",
];

/// What the sections of a reply hold, before the gaps are cleaned and bounded.
#[derive(Debug, Default)]
pub(super) struct Sections {
    pub answer: Option<String>,
    pub items: Vec<String>,
    pub warnings: Vec<String>,
    has_missing: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Answer,
    Missing,
    Other,
}

/// Reads the sections of `text`; `None` when it has neither an answer nor a missing header.
pub(super) fn parse(text: &str) -> Option<Sections> {
    let first = parse_lines(text);
    if first.as_ref().is_some_and(|f| f.has_missing) {
        return first;
    }
    // "ANSWER: it works. MISSING: NONE" on one line, or headers inside prose.
    let second = split_inline_headers(text).and_then(|split| parse_lines(&split));
    match second {
        Some(second) if second.has_missing || first.is_none() => Some(second),
        _ => first,
    }
}

fn parse_lines(text: &str) -> Option<Sections> {
    let mut preamble: Vec<&str> = Vec::new();
    let mut answers: Vec<Vec<&str>> = Vec::new();
    let mut missing: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut current: Option<Kind> = None;
    for line in text.lines() {
        match header(line) {
            Some((Kind::Answer, rest)) => {
                answers.push(vec![rest]);
                current = Some(Kind::Answer);
            }
            Some((Kind::Missing, rest)) => {
                missing.push((rest, Vec::new()));
                current = Some(Kind::Missing);
            }
            Some((Kind::Other, _)) if current == Some(Kind::Missing) => current = None,
            _ => match current {
                None if answers.is_empty() && missing.is_empty() => preamble.push(line),
                Some(Kind::Answer) => answers.last_mut().into_iter().for_each(|a| a.push(line)),
                Some(Kind::Missing) => missing.last_mut().into_iter().for_each(|m| m.1.push(line)),
                _ => {}
            },
        }
    }
    if answers.is_empty() && missing.is_empty() {
        return None;
    }

    // The first answer that is more than the prompt's placeholder ("## Answer" may repeat);
    // without an ANSWER header, the prose before the MISSING one.
    let answer = if answers.is_empty() {
        let before = preamble.join("\n").trim().to_owned();
        (!before.is_empty()).then_some(before)
    } else {
        let texts: Vec<String> = answers
            .iter()
            .map(|lines| lines.join("\n").trim().to_owned())
            .filter(|a| !a.is_empty())
            .collect();
        let first = texts.first().cloned();
        texts
            .into_iter()
            .find(|a| !is_answer_placeholder(a))
            .or(first)
    };
    let mut found = Sections {
        answer,
        has_missing: !missing.is_empty(),
        ..Sections::default()
    };
    if missing.is_empty() {
        found
            .warnings
            .push("no MISSING section; read as no gaps".to_owned());
    }
    for (rest, lines) in &missing {
        let section = section_items(rest, lines);
        if section.ignored_after_none > 0 {
            found.warnings.push(format!(
                "MISSING says none but {} more line(s) follow; they were ignored",
                section.ignored_after_none
            ));
        }
        if section.prose_lines > 0 {
            found.warnings.push(format!(
                "{} non-list line(s) in the MISSING section ignored",
                section.prose_lines
            ));
        }
        found.items.extend(section.items);
    }
    Some(found)
}

/// The items of one MISSING section.
#[derive(Debug, Default)]
struct SectionItems {
    items: Vec<String>,
    ignored_after_none: usize,
    prose_lines: usize,
}

/// Reads the items of a MISSING section: the text after the header on its own line, then one
/// item per line. When the section has list items, other lines are prose and skipped; when it
/// has none, the items end at the first blank line after one was read. A first item meaning
/// "none" ends the section.
fn section_items(rest: &str, lines: &[&str]) -> SectionItems {
    let mut raw: Vec<String> = Vec::new();
    let mut section = SectionItems::default();
    let has_list = lines.iter().any(|l| is_list_item(l));
    // "MISSING: I would need the following:" introduces the list; it is no item.
    let introduces_list = has_list && rest.trim_end().ends_with(':');
    if !rest.trim().is_empty() && !introduces_list {
        raw.extend(split_header_items(rest));
    }
    for line in lines {
        if line.trim().is_empty() {
            if !has_list && !raw.is_empty() {
                break;
            }
            continue;
        }
        if has_list && !is_list_item(line) {
            section.prose_lines += 1;
            continue;
        }
        raw.push((*line).to_owned());
    }
    let first_real = raw.iter().position(|r| !clean_item(r).is_empty());
    if let Some(first) = first_real {
        if is_none_marker(&clean_item(&raw[first])) {
            section.ignored_after_none = raw[first + 1..]
                .iter()
                .filter(|r| !clean_item(r).is_empty())
                .count();
            return section;
        }
    }
    section.items = raw;
    section
}

/// Splits the text after a `MISSING:` header on semicolons, and on commas when every part is
/// a specific target ("MISSING: verify_user in auth.py, class Session").
fn split_header_items(rest: &str) -> Vec<String> {
    let mut items = Vec::new();
    for part in rest.split(';') {
        let commas: Vec<&str> = part.split(',').collect();
        let specific = commas.len() > 1
            && commas.iter().all(|c| {
                let c = clean_item(c);
                !c.is_empty() && !matches!(classify_gap(&c), GapQuery::Fuzzy(_))
            });
        if specific {
            items.extend(commas.iter().map(|c| (*c).to_owned()));
        } else {
            items.push(part.to_owned());
        }
    }
    items
}

/// Recognises a header line and returns its kind and the text after it.
fn header(line: &str) -> Option<(Kind, &str)> {
    let t = line.trim();
    let heading = t.starts_with('#');
    let t = t.trim_start_matches(['#', '>']).trim_start();
    let bold = t.starts_with("**") || t.starts_with("__");
    let t = t.trim_start_matches(['*', '_']).trim_start();
    for (kind, words) in [(Kind::Answer, ANSWER_WORDS), (Kind::Missing, MISSING_WORDS)] {
        for word in words {
            let Some(after) = strip_prefix_ignore_case(t, word) else {
                continue;
            };
            if after.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            if let Some(rest) = header_rest(after, heading) {
                return Some((kind, rest));
            }
        }
    }
    if heading || (bold && is_bold_label(line.trim())) || is_upper_label(t) {
        return Some((Kind::Other, ""));
    }
    None
}

/// After a header word: an optional parenthesis, then `:` and text, or nothing (a markdown
/// heading may have more words).
fn header_rest(after: &str, heading: bool) -> Option<&str> {
    let mut r = after.trim_start();
    if r.starts_with('(') {
        r = r.find(')').map_or("", |close| &r[close + 1..]).trim_start();
    }
    r = r.trim_start_matches(['*', '_']).trim_start();
    if let Some(rest) = r.strip_prefix(':').or_else(|| r.strip_prefix('：')) {
        return Some(rest.trim_start_matches(['*', '_']).trim());
    }
    let tail = r.trim_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_' | '#'));
    (tail.is_empty() || heading).then_some("")
}

/// `**Label:**` or `**Label**:` alone on a line (a heading the model invented).
fn is_bold_label(t: &str) -> bool {
    let inner = t.trim_matches(['*', '_', ':', ' ']);
    let ends_label = t.ends_with(":**") || t.ends_with("**:") || t.ends_with(":__");
    ends_label && !inner.is_empty() && inner.chars().count() <= 40 && !inner.contains(['*', '_'])
}

/// `NOTES:` or `CONFIDENCE: high`: an upper-case label of 3 to 30 characters and a colon.
fn is_upper_label(t: &str) -> bool {
    let Some((label, _)) = t.split_once(':') else {
        return false;
    };
    let letters = label.chars().filter(|c| c.is_alphabetic()).count();
    (3..=30).contains(&label.chars().count())
        && letters >= 3
        && label
            .chars()
            .all(|c| c.is_uppercase() || c == ' ' || c == '_' || c.is_ascii_digit())
        && strip_list_marker(t).is_none()
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// Puts a line break before `ANSWER` and `MISSING` (upper case, then `:` or a parenthesis)
/// written inside a line: "Sure! ANSWER: it works. MISSING: NONE". `None` when there are none.
fn split_inline_headers(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 8);
    let mut found = false;
    let mut last = 0;
    for (at, _) in text.match_indices(['A', 'M']) {
        let after = &text[at..];
        let word = ["ANSWER", "MISSING"]
            .into_iter()
            .find(|w| after.starts_with(w));
        let Some(word) = word else { continue };
        let boundary = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_');
        let next = after[word.len()..].trim_start_matches([' ', '*']);
        if boundary && (next.starts_with(':') || next.starts_with('(')) && at >= last {
            out.push_str(&text[last..at]);
            out.push('\n');
            last = at;
            found = true;
        }
    }
    out.push_str(&text[last..]);
    found.then_some(out)
}
