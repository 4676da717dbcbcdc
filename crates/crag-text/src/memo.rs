//! Index terms of raw tokens remembered across calls.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use crate::term;

type FastHash = foldhash::fast::RandomState;

/// [`term`] of each distinct raw token, computed once and shared by every caller (threads
/// included), for at most `capacity` tokens: a corpus's vocabulary is bounded, and the
/// Snowball stemmer was most of what analysing the same words again cost. Once full, the
/// tokens already held are served from it and any other is analysed each time (never
/// evicted: the first tokens met are the frequent ones).
#[derive(Debug)]
pub struct TermMemo {
    words: RwLock<HashMap<Box<str>, Option<Box<str>>, FastHash>>,
    capacity: usize,
}

impl TermMemo {
    /// A memo that holds at most `capacity` tokens (0: it holds none).
    pub fn new(capacity: usize) -> Self {
        Self {
            words: RwLock::new(HashMap::default()),
            capacity,
        }
    }

    /// `f` of [`term`]`(token)`, from the memo when it holds `token`; a token it does not
    /// hold is analysed and kept while there is room.
    pub fn with_term<R>(&self, token: &str, f: impl FnOnce(Option<&str>) -> R) -> R {
        {
            let words = self.words.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(found) = words.get(token) {
                return f(found.as_deref());
            }
        }
        let analysed = term(token);
        let out = f(analysed.as_deref());
        let mut words = self.words.write().unwrap_or_else(PoisonError::into_inner);
        if words.len() < self.capacity {
            words.insert(token.into(), analysed.map(String::into_boxed_str));
        }
        out
    }

    /// Tokens held.
    pub fn len(&self) -> usize {
        self.words
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether it holds no token.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens;

    const TEXT: &str = "The Effects of the patient's VITAMIN-D intake on bone densities: \
        café, Straße, 𝐀lpha, running runs ran, and a token far too long to be kept \
        abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz";

    fn through(memo: &TermMemo, text: &str) -> Vec<Option<String>> {
        tokens(text)
            .map(|t| memo.with_term(t.text, |term| term.map(str::to_owned)))
            .collect()
    }

    fn direct(text: &str) -> Vec<Option<String>> {
        tokens(text).map(|t| term(t.text)).collect()
    }

    #[test]
    fn gives_what_term_gives_first_and_from_memory() {
        let memo = TermMemo::new(1_000);
        assert_eq!(through(&memo, TEXT), direct(TEXT));
        let held = memo.len();
        assert!(held > 0);
        assert_eq!(through(&memo, TEXT), direct(TEXT));
        assert_eq!(memo.len(), held, "the second pass analysed nothing new");
    }

    #[test]
    fn holds_no_more_than_its_capacity_and_stays_right_past_it() {
        for capacity in [0, 1, 3] {
            let memo = TermMemo::new(capacity);
            assert_eq!(through(&memo, TEXT), direct(TEXT));
            assert_eq!(through(&memo, TEXT), direct(TEXT));
            assert_eq!(memo.len(), capacity);
        }
        assert!(TermMemo::new(0).is_empty());
    }

    #[test]
    fn is_shared_by_threads() {
        let memo = TermMemo::new(10_000);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| assert_eq!(through(&memo, TEXT), direct(TEXT)));
            }
        });
        assert_eq!(through(&memo, TEXT), direct(TEXT));
    }
}
