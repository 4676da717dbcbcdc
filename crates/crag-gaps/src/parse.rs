//! Reading the answer and the gaps out of a model's reply (see [`parse_answer_and_gaps`]).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::clean::{byte_prefix, char_prefix, clean_item};
use crate::key::gap_key;
use crate::prompt::{JSON_PLACEHOLDERS, SECTIONS_ANSWER_PLACEHOLDER, SECTIONS_EXAMPLE_GAPS};

mod json;
mod none;
mod sections;

pub(crate) use none::is_none_marker;

/// Most gaps kept from one reply; the rest are dropped (with a warning).
pub const MAX_GAPS: usize = 10;
/// Most characters of one gap; longer ones are cut (with a warning).
pub const MAX_GAP_CHARS: usize = 200;
/// Most chunk ids kept from one reply.
pub const MAX_CHUNK_IDS: usize = 50;
/// Longest chunk id kept, in bytes (the domain's id limit); longer ones are dropped.
pub const MAX_CHUNK_ID_BYTES: usize = 2048;
/// Bytes of a reply examined; the rest is ignored (with a warning).
pub const MAX_REPLY_BYTES: usize = 64 * 1024;

/// How a reply was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// `ANSWER:` / `MISSING:` sections (the sections prompt's format), in any case or markdown.
    Sections,
    /// A JSON object with at least one known field (the JSON prompt's format).
    Json,
    /// Neither: the whole reply is the answer and there are no gaps.
    Unparsed,
}

/// The answer and the gaps read from a model's reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedReply {
    /// The answer, trimmed; `None` when the reply gives none (or only the prompt's
    /// placeholder). With [`Format::Unparsed`] it is the whole reply.
    pub answer: Option<String>,
    /// What the model says is missing: cleaned, de-duplicated case-insensitively (first
    /// occurrence kept, in order), at most [`MAX_GAPS`] of at most [`MAX_GAP_CHARS`]
    /// characters. Empty means "no gaps": stop iterating.
    pub gaps: Vec<String>,
    /// The chunk ids the model says it used, as written (JSON replies only; see
    /// [`crate::resolve_chunk_ids`] to map them onto the prompt's chunks).
    pub useful_chunk_ids: Vec<String>,
    /// The JSON reply's `is_sufficient`, when given.
    pub is_sufficient: Option<bool>,
    /// How the reply was read.
    pub format: Format,
    /// What was tolerated or dropped, for the caller's metadata (bounded: one line per kind
    /// of problem).
    pub warnings: Vec<String>,
}

impl ParsedReply {
    /// Drops the gaps that merely repeat `question` (small models echo it into the MISSING
    /// list), compared by [`gap_key`]; returns how many were dropped.
    pub fn drop_question_echo(&mut self, question: &str) -> usize {
        let question = gap_key(question);
        let before = self.gaps.len();
        self.gaps.retain(|gap| gap_key(gap) != question);
        let dropped = before - self.gaps.len();
        if dropped > 0 {
            self.warnings
                .push(format!("{dropped} gap(s) repeating the question dropped"));
        }
        dropped
    }
}

/// Reads the answer and the gaps of a reply to [`crate::answer_and_gaps_prompt`] or
/// [`crate::answer_and_gaps_json_prompt`]. Never panics and never fails: a reply it cannot
/// read gives no gaps, [`Format::Unparsed`] and a warning.
///
/// JSON first: the whole reply, a fenced block, or the first balanced `{...}` in the prose
/// that has a known field (`answer`, `missing`/`gaps`, `is_sufficient`, `useful_chunk_ids`,
/// matched case-insensitively); trailing commas and a reply cut short are repaired. Otherwise
/// sections: `ANSWER` and `MISSING` headers in any case, alone on a line or followed by text,
/// with or without a colon or a parenthesis (`MISSING (or "NONE" if nothing needed):`), in
/// markdown (`**MISSING:**`, `## Missing`), or inline (`... MISSING: NONE`). Prose before the
/// first header and after the list is ignored.
///
/// Items: one per line (or per JSON string), with bullets (`-`, `*`, `•`, `+`), numbering
/// (`1.`, `1)`, `(1)`, `[1]`), quotes, backticks and bold removed; empty lines skipped;
/// "NONE", "None.", "n/a", "nothing", "no missing context" and the like mean no gaps; items
/// repeating the prompt's examples are dropped.
pub fn parse_answer_and_gaps(text: &str) -> ParsedReply {
    let mut warnings = Vec::new();
    let scanned = byte_prefix(text, MAX_REPLY_BYTES);
    if scanned.len() < text.len() {
        warnings.push(format!(
            "reply longer than {MAX_REPLY_BYTES} bytes; only its start was read"
        ));
    }
    let trimmed = scanned.trim();
    if trimmed.is_empty() {
        warnings.push("empty reply".to_owned());
        return reply(
            None,
            Gaps::default(),
            Vec::new(),
            None,
            Format::Unparsed,
            warnings,
        );
    }

    if let Some(found) = json::parse(trimmed) {
        warnings.extend(found.warnings);
        let mut gaps = Gaps::default();
        gaps.extend(found.missing.iter().map(String::as_str));
        match (found.is_sufficient, gaps.items.is_empty()) {
            (Some(true), false) => warnings.push(format!(
                "is_sufficient is true but {} gap(s) are listed; the gaps are kept",
                gaps.items.len()
            )),
            (Some(false), true) => {
                warnings.push("is_sufficient is false but no gap is listed".to_owned())
            }
            _ => {}
        }
        let ids = chunk_ids(&found.chunk_ids, &mut warnings);
        return reply(
            found.answer,
            gaps,
            ids,
            found.is_sufficient,
            Format::Json,
            warnings,
        );
    }

    if let Some(found) = sections::parse(trimmed) {
        warnings.extend(found.warnings);
        let mut gaps = Gaps::default();
        gaps.extend(found.items.iter().map(String::as_str));
        return reply(
            found.answer,
            gaps,
            Vec::new(),
            None,
            Format::Sections,
            warnings,
        );
    }

    warnings.push(
        "reply has neither ANSWER/MISSING sections nor a JSON object; read as an answer with \
         no gaps"
            .to_owned(),
    );
    reply(
        Some(trimmed.to_owned()),
        Gaps::default(),
        Vec::new(),
        None,
        Format::Unparsed,
        warnings,
    )
}

fn reply(
    answer: Option<String>,
    gaps: Gaps,
    useful_chunk_ids: Vec<String>,
    is_sufficient: Option<bool>,
    format: Format,
    mut warnings: Vec<String>,
) -> ParsedReply {
    let answer = answer
        .map(|a| a.trim().to_owned())
        .filter(|a| !a.is_empty());
    let answer = match answer {
        Some(a) if is_answer_placeholder(&a) => {
            warnings.push("the answer repeats the prompt's placeholder".to_owned());
            None
        }
        other => other,
    };
    gaps.warn(&mut warnings);
    ParsedReply {
        answer,
        gaps: gaps.items,
        useful_chunk_ids,
        is_sufficient,
        format,
        warnings,
    }
}

pub(crate) fn is_answer_placeholder(answer: &str) -> bool {
    let key = gap_key(answer);
    key == gap_key(SECTIONS_ANSWER_PLACEHOLDER)
        || key == gap_key(JSON_PLACEHOLDERS[0])
        || key == "your answer here"
        || key == "<your answer here>"
}

/// Returns whether `item` (cleaned) repeats one of the prompts' example items, or names one
/// of their made-up paths ("file_name in path/to/file.py").
fn is_template_item(item: &str) -> bool {
    let key = gap_key(item);
    SECTIONS_EXAMPLE_GAPS
        .iter()
        .chain(JSON_PLACEHOLDERS.iter())
        .any(|example| gap_key(example) == key)
        || TEMPLATE_PATHS.iter().any(|path| key.contains(path))
}

/// The made-up paths of [`SECTIONS_EXAMPLE_GAPS`].
const TEMPLATE_PATHS: [&str; 2] = ["path/to/file.py", "some/module.py"];

/// The gaps being collected, with counts of what was dropped.
#[derive(Debug, Default)]
struct Gaps {
    items: Vec<String>,
    keys: HashSet<String>,
    cut: usize,
    over_cap: usize,
    echoed: usize,
}

impl Gaps {
    fn extend<'a>(&mut self, raw_items: impl IntoIterator<Item = &'a str>) {
        for raw in raw_items {
            self.push(raw);
        }
    }

    fn push(&mut self, raw: &str) {
        let item = clean_item(raw);
        if item.is_empty() || is_none_marker(&item) {
            return;
        }
        if is_template_item(&item) {
            self.echoed += 1;
            return;
        }
        let (capped, was_cut) = char_prefix(&item, MAX_GAP_CHARS);
        let capped = capped.trim_end();
        let key = gap_key(capped);
        if key.is_empty() || self.keys.contains(&key) {
            return;
        }
        if self.items.len() >= MAX_GAPS {
            self.over_cap += 1;
            return;
        }
        self.cut += usize::from(was_cut);
        self.keys.insert(key);
        self.items.push(capped.to_owned());
    }

    fn warn(&self, warnings: &mut Vec<String>) {
        if self.echoed > 0 {
            warnings.push(format!(
                "{} item(s) repeating the prompt's examples dropped",
                self.echoed
            ));
        }
        if self.cut > 0 {
            warnings.push(format!(
                "{} gap(s) cut to {MAX_GAP_CHARS} characters",
                self.cut
            ));
        }
        if self.over_cap > 0 {
            warnings.push(format!(
                "{} gap(s) beyond the first {MAX_GAPS} dropped",
                self.over_cap
            ));
        }
    }
}

/// Trims, de-duplicates and bounds the chunk ids of a JSON reply.
fn chunk_ids(raw: &[String], warnings: &mut Vec<String>) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    let (mut too_long, mut over_cap) = (0usize, 0usize);
    for id in raw {
        let id = crate::clean::strip_wrapping(id);
        if id.is_empty() || JSON_PLACEHOLDERS.contains(&id) || ids.iter().any(|kept| kept == id) {
            continue;
        }
        if id.len() > MAX_CHUNK_ID_BYTES {
            too_long += 1;
        } else if ids.len() >= MAX_CHUNK_IDS {
            over_cap += 1;
        } else {
            ids.push(id.to_owned());
        }
    }
    if too_long > 0 {
        warnings.push(format!(
            "{too_long} chunk id(s) longer than {MAX_CHUNK_ID_BYTES} bytes dropped"
        ));
    }
    if over_cap > 0 {
        warnings.push(format!(
            "{over_cap} chunk id(s) beyond the first {MAX_CHUNK_IDS} dropped"
        ));
    }
    ids
}

#[cfg(test)]
mod tests;
