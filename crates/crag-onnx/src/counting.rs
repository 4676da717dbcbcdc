//! Token counts remembered per whitespace-separated piece of text.
//!
//! A BERT tokenizer never makes a token across whitespace: its normalizer works character by
//! character (cleaning, CJK spacing, lowercasing, accents), its pre-tokenizer splits at
//! whitespace (and punctuation), WordPiece works within a word, and its special tokens hold no
//! whitespace. So the tokens of a text are the tokens of its whitespace-separated pieces, one
//! after the other, and a text's count is the sum of its pieces' counts. Words repeat, so a
//! piece's count is remembered: counting a query's results (packing, refinement) then costs a
//! lookup per word where the tokenizer took about 3 us per token on this machine.
//!
//! The memory is a plain map behind one lock, taken once per text for all its pieces, and
//! never evicted (the first pieces met are the frequent ones; once full, the others are
//! counted each time). A `moka` cache was here before: its bookkeeping per lookup made
//! counting most of refinement's time.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use tokenizers::{NormalizerWrapper, PreTokenizerWrapper, Tokenizer};

use crate::error::{OnnxError, Result};

type FastHash = foldhash::fast::RandomState;

/// Pieces remembered.
const CAPACITY: usize = 200_000;

/// Longer pieces (a URL, a base64 blob) are counted every time, not remembered.
const MAX_REMEMBERED_BYTES: usize = 64;

/// Counts the tokens `tokenizer` gives a text (no special tokens added; a token with an empty
/// span does not count, as in [`crate::OnnxEmbedder`]'s spans).
pub(crate) struct TokenCounter {
    tokenizer: Arc<Tokenizer>,
    /// `None` when the tokenizer is not known to keep tokens within whitespace-separated
    /// pieces: every text is then tokenized whole.
    pieces: Option<Pieces>,
}

/// Token counts of pieces, at most `capacity` of them.
struct Pieces {
    counts: RwLock<HashMap<Box<str>, u32, FastHash>>,
    capacity: usize,
}

impl TokenCounter {
    pub(crate) fn new(tokenizer: Arc<Tokenizer>) -> Self {
        Self::with_capacity(tokenizer, CAPACITY)
    }

    /// A counter remembering at most `capacity` pieces.
    fn with_capacity(tokenizer: Arc<Tokenizer>, capacity: usize) -> Self {
        let pieces = splits_at_whitespace(&tokenizer).then(|| Pieces {
            counts: RwLock::new(HashMap::default()),
            capacity,
        });
        Self { tokenizer, pieces }
    }

    /// The number of tokens of `text`.
    pub(crate) fn count(&self, text: &str) -> Result<usize> {
        let Some(pieces) = &self.pieces else {
            return self.tokenize(text);
        };
        let mut total = 0;
        // Pieces not remembered (or too long to be), counted after the lock is let go.
        let mut unknown: Vec<&str> = Vec::new();
        {
            let counts = pieces.counts.read().unwrap_or_else(PoisonError::into_inner);
            for piece in text.split(separates).filter(|p| !p.is_empty()) {
                match counts.get(piece) {
                    Some(&count) => total += count as usize,
                    None => unknown.push(piece),
                }
            }
        }
        if unknown.is_empty() {
            return Ok(total);
        }
        let mut learnt: Vec<(&str, u32)> = Vec::with_capacity(unknown.len());
        for piece in unknown {
            let count = self.tokenize(piece)?;
            total += count;
            if piece.len() <= MAX_REMEMBERED_BYTES {
                learnt.push((piece, u32::try_from(count).unwrap_or(u32::MAX)));
            }
        }
        pieces.remember(learnt);
        Ok(total)
    }

    /// Pieces remembered.
    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.pieces.as_ref().map_or(0, |p| {
            p.counts
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .len()
        })
    }

    fn tokenize(&self, text: &str) -> Result<usize> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| OnnxError::Tokenizer(e.to_string()))?;
        Ok(encoding
            .get_offsets()
            .iter()
            .filter(|(start, end)| start < end)
            .count())
    }
}

impl Pieces {
    /// Keeps `learnt` counts while there is room.
    fn remember(&self, learnt: Vec<(&str, u32)>) {
        if learnt.is_empty() {
            return;
        }
        let mut counts = self.counts.write().unwrap_or_else(PoisonError::into_inner);
        for (piece, count) in learnt {
            if counts.len() >= self.capacity {
                break;
            }
            counts.insert(piece.into(), count);
        }
    }
}

/// Whitespace the tokenizer always splits at. Not the three whitespace characters that are
/// also control characters (vertical tab, form feed, next line): BERT's normalizer deletes
/// them, joining what they separated.
fn separates(c: char) -> bool {
    c.is_whitespace() && !matches!(c, '\u{000B}' | '\u{000C}' | '\u{0085}')
}

/// Whether `tokenizer` is BERT's pipeline (or as local), whose tokens never cross whitespace.
fn splits_at_whitespace(tokenizer: &Tokenizer) -> bool {
    let normalizer = matches!(
        tokenizer.get_normalizer(),
        None | Some(NormalizerWrapper::BertNormalizer(_))
    );
    let pre_tokenizer = matches!(
        tokenizer.get_pre_tokenizer(),
        Some(PreTokenizerWrapper::BertPreTokenizer(_))
            | Some(PreTokenizerWrapper::Whitespace(_))
            | Some(PreTokenizerWrapper::WhitespaceSplit(_))
    );
    let special = tokenizer
        .get_added_tokens_decoder()
        .values()
        .all(|t| !t.content.chars().any(char::is_whitespace));
    normalizer && pre_tokenizer && special
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    /// A BERT pipeline over a small vocabulary: "running" is "run" "##ning", a word outside it
    /// is one unknown token.
    fn bert() -> Arc<Tokenizer> {
        let json = r###"{
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": {"type": "BertNormalizer", "clean_text": true,
                "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": null, "decoder": null,
            "model": {"type": "WordPiece", "unk_token": "[UNK]",
                "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                "vocab": {"[UNK]": 0, "run": 1, "##ning": 2, "fast": 3, "dogs": 4, ",": 5, ".": 6}}
        }"###;
        Arc::new(Tokenizer::from_str(json).expect("tokenizer"))
    }

    #[test]
    fn counts_are_the_tokenizers_and_memory_stops_at_its_capacity() {
        let tokenizer = bert();
        let long = "x".repeat(MAX_REMEMBERED_BYTES + 1);
        let text = format!("Running dogs, fast.  running\tzebra {long} dogs");
        let counter = TokenCounter::with_capacity(Arc::clone(&tokenizer), 3);
        assert!(
            counter.pieces.is_some(),
            "a BERT pipeline is counted by pieces"
        );
        let whole = TokenCounter {
            tokenizer,
            pieces: None,
        };
        let expected = whole.count(&text).unwrap();
        // run ##ning | dogs , | fast . | run ##ning | [UNK] | [UNK] | dogs
        assert_eq!(expected, 11);
        for _ in 0..3 {
            assert_eq!(counter.count(&text).unwrap(), expected);
        }
        // Six distinct pieces of at most 64 bytes, three remembered; the long one never.
        assert_eq!(counter.remembered(), 3);
        assert_eq!(counter.count("").unwrap(), 0);
        assert_eq!(counter.count(" \t\n").unwrap(), 0);
    }

    #[test]
    fn a_long_piece_is_counted_every_time_and_never_remembered() {
        let counter = TokenCounter::with_capacity(bert(), 10);
        let long = "run".repeat(30);
        assert_eq!(counter.count(&long).unwrap(), 1);
        assert_eq!(counter.remembered(), 0);
        assert_eq!(counter.count("run run").unwrap(), 2);
        assert_eq!(counter.remembered(), 1);
    }
}
