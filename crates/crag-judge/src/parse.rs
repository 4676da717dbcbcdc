//! Reading per-document scores out of a language model's answer (see [`parse_llm_scores`]).

use serde_json::{Map, Value};

use crag_core::clip_reason;

use crate::error::{EvaluationError, Result};
use crate::stats::char_prefix;
use keys::{INDEX_KEYS, LIST_KEYS, REASON_KEYS, SCORE_KEYS};
use scan::{byte_prefix, embedded_objects, fenced_blocks};

mod keys;
mod scan;

/// Highest score of the scale the prompt asks for.
const MAX_SCORE: f64 = 10.0;
/// Bytes of the answer examined; judgements are a few hundred bytes.
const MAX_SCAN_BYTES: usize = 64 * 1024;
/// Objects searched below the top level for a score list.
const MAX_DEPTH: usize = 4;
/// Characters of the answer quoted in an `Unparseable` error.
const EXCERPT_CHARS: usize = 160;

/// Per-document scores read from a language model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedScores {
    /// One entry per expected document, on the 0-10 scale (clamped into it); `None` where the
    /// answer gives no usable score.
    pub scores: Vec<Option<f32>>,
    /// One entry per expected document: the reason given with its score, made one line and cut
    /// to [`crag_core::MAX_DOCUMENT_REASON_CHARS`] by [`clip_reason`]; `None` where the answer
    /// gives none, or gives no usable score to go with it.
    pub reasons: Vec<Option<String>>,
    /// The answer's overall reasoning, or else its per-document reasons joined.
    pub reasoning: Option<String>,
    /// Problems met: missing, duplicate, out-of-range or unreadable entries.
    pub issues: Vec<String>,
}

/// Reads the scores of `expected` documents (numbered from 1 in the prompt) from `answer`.
///
/// Only JSON is read: free text never yields a score or a verdict (a `"no" in answer` test
/// would turn "No, I cannot help" into a judgement). Where the JSON may sit:
///
/// 1. the whole answer;
/// 2. a fenced block (```` ```json ... ``` ```` or a bare fence);
/// 3. JSON objects embedded in prose (arrays only count in cases 1 and 2, so prose such as
///    `see [1]` is never read as a score);
/// 4. as a last resort, per-document objects such as `{"document": 2, "score": 3}` read one by
///    one, which recovers an answer cut short by the token limit.
///
/// Shapes: an object with a list under `scores`, `evaluations`, `documents`, `results`,
/// `ratings`, `judgements`/`judgments` or `relevance_scores` (searched up to four objects deep),
/// a bare array, or, for a single document, an object with a score field. List items are numbers,
/// numeric strings (`"7"`, `"7/10"`) or objects with a score field (`score`, `relevance_score`,
/// `relevance`, `rating`), an optional index field (`document`, `doc`, `index`,
/// `document_index`, `doc_index`, `id`, `document_id`, `doc_id`, `idx`, `number`; numbers or
/// strings such as `"Document 2"`) and an optional reason (`reason`, `reasoning`, `explanation`,
/// `rationale`, `summary`), kept as the document's reason next to its score. A list may also be
/// a map from index to score (`{"1": 7, "2": 3}`). Field names match case-insensitively.
///
/// Indices: the prompt numbers documents from 1 and asks for those numbers. Explicit indices are
/// read as 1-based unless one of them is 0, in which case all are read as 0-based (reported in
/// the issues). Items without an index take their position in the list.
///
/// Scores are on a 0-10 scale: values outside are clamped and reported; NaN, infinities and
/// non-numeric values are rejected and reported; documents without a score are reported one by
/// one. When no score at all can be matched to a document, the result is
/// [`EvaluationError::Unparseable`].
///
/// With `expected == 0` there is nothing to read and the result is empty.
pub fn parse_llm_scores(answer: &str, expected: usize) -> Result<ParsedScores> {
    if expected == 0 {
        return Ok(ParsedScores {
            scores: Vec::new(),
            reasons: Vec::new(),
            reasoning: None,
            issues: vec!["no documents were expected; the answer was not read".into()],
        });
    }
    let text = byte_prefix(answer.trim(), MAX_SCAN_BYTES);
    let mut found_entries = false;
    let mut accept = |judgement: Judgement| {
        found_entries |= !judgement.entries.is_empty();
        judgement.into_scores(expected)
    };

    let mut candidates: Vec<&str> = vec![text];
    candidates.extend(fenced_blocks(text));
    for candidate in candidates {
        if let Ok(value) = serde_json::from_str::<Value>(candidate.trim()) {
            if let Some(parsed) = whole_judgement(&value).and_then(&mut accept) {
                return Ok(parsed);
            }
        }
    }

    let objects = embedded_objects(text);
    for object in &objects {
        if let Some(parsed) = find_list(object, 0).and_then(&mut accept) {
            return Ok(parsed);
        }
    }
    let fragments: Vec<&Map<String, Value>> = objects
        .iter()
        .filter_map(Value::as_object)
        .filter(|map| field(map, SCORE_KEYS).is_some())
        .collect();
    if !fragments.is_empty() {
        let entries: Vec<Entry> = fragments
            .iter()
            .map(|map| entry_from_object(map, None))
            .collect();
        let reasoning = fragments
            .iter()
            .find_map(|map| reason_of(map))
            .filter(|_| fragments.len() == 1)
            .or_else(|| joined_reasons(&entries));
        let note = (fragments.len() > 1).then(|| {
            format!(
                "the answer is not one complete JSON value; scores read from {} separate objects",
                fragments.len()
            )
        });
        if let Some(parsed) = accept(Judgement {
            entries,
            reasoning,
            note,
        }) {
            return Ok(parsed);
        }
    }

    let message = if found_entries {
        format!("no readable score in the answer matches one of the {expected} documents")
    } else {
        "no JSON with relevance scores found in the answer".to_owned()
    };
    Err(EvaluationError::Unparseable {
        message,
        excerpt: char_prefix(answer.trim(), EXCERPT_CHARS).0.to_owned(),
    })
}

/// A score list found in the answer, before it is matched to documents.
struct Judgement {
    entries: Vec<Entry>,
    reasoning: Option<String>,
    note: Option<String>,
}

struct Entry {
    index: Index,
    score: Score,
    reason: Option<String>,
}

enum Index {
    Missing,
    At(i64),
    Unreadable,
}

enum Score {
    Value(f64),
    Unreadable(String),
}

impl Judgement {
    /// Matches the entries to `expected` documents; `None` when no score lands on a document.
    fn into_scores(self, expected: usize) -> Option<ParsedScores> {
        let mut issues: Vec<String> = self.note.into_iter().collect();
        let zero_based = self.entries.iter().any(|e| matches!(e.index, Index::At(0)));
        if zero_based {
            issues.push("the answer numbers documents from 0; indices read as 0-based".into());
        }
        let mut scores: Vec<Option<f32>> = vec![None; expected];
        let mut reasons: Vec<Option<String>> = vec![None; expected];
        let mut beyond = Vec::new();
        for (position, entry) in self.entries.iter().enumerate() {
            let slot = match entry.index {
                Index::At(i) if zero_based => i,
                Index::At(i) => i.saturating_sub(1),
                Index::Missing => i64::try_from(position).unwrap_or(i64::MAX),
                Index::Unreadable => {
                    issues.push(format!(
                        "entry {}: unreadable document index; ignored",
                        position + 1
                    ));
                    continue;
                }
            };
            let Some(slot) = usize::try_from(slot).ok().filter(|&s| s < expected) else {
                beyond.push(slot.saturating_add(1).to_string());
                continue;
            };
            let document = slot + 1;
            let value = match &entry.score {
                Score::Value(v) => *v,
                Score::Unreadable(what) => {
                    issues.push(format!("document {document}: unreadable score ({what})"));
                    continue;
                }
            };
            if scores[slot].is_some() {
                issues.push(format!(
                    "document {document}: scored more than once; first score kept"
                ));
                continue;
            }
            let clamped = value.clamp(0.0, MAX_SCORE);
            if clamped != value {
                issues.push(format!(
                    "document {document}: score {value} outside 0-10; clamped to {clamped}"
                ));
            }
            scores[slot] = Some(clamped as f32);
            reasons[slot] = entry.reason.as_deref().and_then(clip_reason);
        }
        if !beyond.is_empty() {
            issues.push(format!(
                "entries for documents {} lie outside the {expected} judged documents; ignored",
                beyond.join(", ")
            ));
        }
        if scores.iter().all(Option::is_none) {
            return None;
        }
        for (slot, score) in scores.iter().enumerate() {
            if score.is_none() {
                issues.push(format!("document {}: no score in the answer", slot + 1));
            }
        }
        let read: Vec<f32> = scores.iter().flatten().copied().collect();
        if read.iter().all(|&s| s <= 1.0) && read.iter().any(|s| s.fract() != 0.0) {
            issues.push(
                "every score is at most 1; if the model answered on a 0-1 scale, they are read \
                 too low"
                    .into(),
            );
        }
        Some(ParsedScores {
            scores,
            reasons,
            reasoning: self.reasoning,
            issues,
        })
    }
}

/// Reads a whole JSON value: a score list, an object holding one, or a single scored object.
fn whole_judgement(value: &Value) -> Option<Judgement> {
    match value {
        Value::Array(_) => {
            let entries = entries_from_list(value)?;
            Some(Judgement {
                reasoning: joined_reasons(&entries),
                entries,
                note: None,
            })
        }
        Value::Object(map) => find_list(value, 0).or_else(|| {
            field(map, SCORE_KEYS)?;
            let entry = entry_from_object(map, None);
            Some(Judgement {
                reasoning: reason_of(map).or_else(|| entry.reason.clone()),
                entries: vec![entry],
                note: None,
            })
        }),
        _ => None,
    }
}

/// Finds a score list under a list key of `value` or of an object nested in it.
fn find_list(value: &Value, depth: usize) -> Option<Judgement> {
    let map = value.as_object()?;
    for key in LIST_KEYS {
        let Some(list) = get(map, key) else { continue };
        if let Some(entries) = entries_from_list(list) {
            return Some(Judgement {
                reasoning: reason_of(map).or_else(|| joined_reasons(&entries)),
                entries,
                note: None,
            });
        }
    }
    if depth >= MAX_DEPTH {
        return None;
    }
    map.values()
        .filter(|inner| inner.is_object())
        .find_map(|inner| find_list(inner, depth + 1))
}

fn entries_from_list(list: &Value) -> Option<Vec<Entry>> {
    match list {
        Value::Array(items) => Some(
            items
                .iter()
                .map(|item| entry(item, Index::Missing))
                .collect(),
        ),
        Value::Object(map) => Some(
            map.iter()
                .map(|(key, item)| entry(item, index_from_str(key)))
                .collect(),
        ),
        _ => None,
    }
}

fn entry(item: &Value, index: Index) -> Entry {
    match item {
        Value::Object(map) => entry_from_object(map, Some(index)),
        other => Entry {
            index,
            score: read_score(other),
            reason: None,
        },
    }
}

fn entry_from_object(map: &Map<String, Value>, key_index: Option<Index>) -> Entry {
    let index = match field(map, INDEX_KEYS) {
        Some(value) => read_index(value),
        None => key_index.unwrap_or(Index::Missing),
    };
    let score = match field(map, SCORE_KEYS) {
        Some(value) => read_score(value),
        None => Score::Unreadable("no score field".into()),
    };
    Entry {
        index,
        score,
        reason: field(map, REASON_KEYS).and_then(text_of),
    }
}

fn read_score(value: &Value) -> Score {
    let parsed = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_score_str(s),
        Value::Null => return Score::Unreadable("null".into()),
        Value::Bool(b) => return Score::Unreadable(format!("boolean {b}")),
        Value::Array(_) => return Score::Unreadable("a list".into()),
        Value::Object(_) => return Score::Unreadable("an object".into()),
    };
    match parsed {
        Some(v) if v.is_finite() => Score::Value(v),
        _ => Score::Unreadable(format!("{:?}", char_prefix(&value.to_string(), 40).0)),
    }
}

fn parse_score_str(text: &str) -> Option<f64> {
    let text = text.trim();
    let text = text
        .strip_suffix("/10")
        .or_else(|| text.strip_suffix("/ 10"))
        .or_else(|| text.strip_suffix(" out of 10"))
        .unwrap_or(text)
        .trim();
    text.parse::<f64>().ok()
}

fn read_index(value: &Value) -> Index {
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                    .map(|f| f as i64)
            })
            .map_or(Index::Unreadable, Index::At),
        Value::String(s) => index_from_str(s),
        _ => Index::Unreadable,
    }
}

/// Reads the last run of ASCII digits: `"2"`, `"Document 2"`, `"doc_2"`.
fn index_from_str(text: &str) -> Index {
    let end = match text.rfind(|c: char| c.is_ascii_digit()) {
        Some(end) => end + 1,
        None => return Index::Unreadable,
    };
    let start = text[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    text[start..end]
        .parse::<i64>()
        .map_or(Index::Unreadable, Index::At)
}

fn get<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    map.get(name).or_else(|| {
        map.iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value)
    })
}

/// Returns the value of the first of `names` present in `map`.
fn field<'a>(map: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names.iter().find_map(|name| get(map, name))
}

fn text_of(value: &Value) -> Option<String> {
    value
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn reason_of(map: &Map<String, Value>) -> Option<String> {
    field(map, REASON_KEYS).and_then(text_of)
}

fn joined_reasons(entries: &[Entry]) -> Option<String> {
    let reasons: Vec<&str> = entries
        .iter()
        .filter_map(|e| e.reason.as_deref())
        .take(3)
        .collect();
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

#[cfg(test)]
mod tests;
