//! Token counts remembered per whitespace-separated piece of text.
//!
//! A BERT tokenizer never makes a token across whitespace: its normalizer works character by
//! character (cleaning, CJK spacing, lowercasing, accents), its pre-tokenizer splits at
//! whitespace (and punctuation), WordPiece works within a word, and its special tokens hold no
//! whitespace. So the tokens of a text are the tokens of its whitespace-separated pieces, one
//! after the other, and a text's count is the sum of its pieces' counts. Words repeat, so a
//! piece's count is remembered: counting a query's results (packing, refinement) then costs a
//! lookup per word where the tokenizer took about 3 us per token on this machine.

use std::sync::Arc;

use moka::sync::Cache;
use tokenizers::{NormalizerWrapper, PreTokenizerWrapper, Tokenizer};

use crate::error::{OnnxError, Result};

/// Pieces remembered.
const CAPACITY: u64 = 200_000;

/// Longer pieces (a URL, a base64 blob) are counted every time, not remembered.
const MAX_REMEMBERED_BYTES: usize = 64;

/// Counts the tokens `tokenizer` gives a text (no special tokens added; a token with an empty
/// span does not count, as in [`crate::OnnxEmbedder`]'s spans).
pub(crate) struct TokenCounter {
    tokenizer: Arc<Tokenizer>,
    /// `None` when the tokenizer is not known to keep tokens within whitespace-separated
    /// pieces: every text is then tokenized whole.
    pieces: Option<Cache<String, u32>>,
}

impl TokenCounter {
    pub(crate) fn new(tokenizer: Arc<Tokenizer>) -> Self {
        let pieces = splits_at_whitespace(&tokenizer).then(|| Cache::new(CAPACITY));
        Self { tokenizer, pieces }
    }

    /// The number of tokens of `text`.
    pub(crate) fn count(&self, text: &str) -> Result<usize> {
        let Some(pieces) = &self.pieces else {
            return self.tokenize(text);
        };
        let mut total = 0;
        for piece in text.split(separates).filter(|p| !p.is_empty()) {
            if piece.len() > MAX_REMEMBERED_BYTES {
                total += self.tokenize(piece)?;
                continue;
            }
            let count = match pieces.get(piece) {
                Some(count) => count as usize,
                None => {
                    let count = self.tokenize(piece)?;
                    pieces.insert(piece.to_owned(), u32::try_from(count).unwrap_or(u32::MAX));
                    count
                }
            };
            total += count;
        }
        Ok(total)
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
