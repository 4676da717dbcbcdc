//! The index terms of a feedback rerank's candidates, each distinct term numbered.

use std::collections::HashMap;

use crag_text::TermMemo;

/// A fast, non-cryptographic hash for maps keyed by words of text that a query already
/// shows (no adversary gains by colliding them).
type FastHash = foldhash::fast::RandomState;

/// The index terms of the candidates of a feedback rerank, as the keyword index analyses
/// them (each candidate's title, then its text), each distinct term numbered. A raw token is
/// analysed once however often the candidates repeat it. A caller that keeps each candidate's
/// terms ([`term_counts_in`], through a [`TermMemo`] shared across queries) adds them with
/// [`CandidateTerms::push_counts`], numbered as [`CandidateTerms::push`] of the words would.
#[derive(Debug, Clone, Default)]
pub struct CandidateTerms {
    /// Raw token as written -> its term's number (`None`: a stop word or too long).
    by_token: HashMap<String, Option<u32>, FastHash>,
    /// Term -> its number.
    by_term: HashMap<String, u32, FastHash>,
    pub(crate) candidates: Vec<Vec<u32>>,
}

impl CandidateTerms {
    /// No candidates yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next candidate from its [`term_counts`]: the same terms, numbered the same
    /// way, as [`CandidateTerms::push`] of its title and text gives (its terms listed by
    /// [`CandidateTerms::terms`] grouped, each as often as it occurs, in the order they first
    /// occur).
    pub fn push_counts<S: AsRef<str>>(&mut self, counts: &[(S, u32)]) {
        let mut ids = Vec::with_capacity(counts.iter().map(|(_, c)| *c as usize).sum());
        for (term, count) in counts {
            let id = number(&mut self.by_term, term.as_ref());
            ids.extend(std::iter::repeat_n(id, *count as usize));
        }
        self.candidates.push(ids);
    }

    /// Adds the next candidate: the terms of its `title` and its `text`.
    pub fn push(&mut self, title: &str, text: &str) {
        let mut ids = Vec::new();
        for part in [title, text] {
            for token in crag_text::tokens(part) {
                if let Some(id) = self.id(token.text) {
                    ids.push(id);
                }
            }
        }
        self.candidates.push(ids);
    }

    fn id(&mut self, token: &str) -> Option<u32> {
        if let Some(&id) = self.by_token.get(token) {
            return id;
        }
        let id = crag_text::term(token).map(|t| number(&mut self.by_term, &t));
        self.by_token.insert(token.to_owned(), id);
        id
    }

    /// Candidates pushed.
    pub fn len(&self) -> usize {
        self.candidates.len()
    }

    /// Whether none was pushed.
    pub fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }

    /// Distinct terms over all candidates.
    pub fn distinct_terms(&self) -> usize {
        self.by_term.len()
    }

    /// Candidate `i`'s terms, in order, duplicates kept (empty past the last candidate).
    pub fn terms(&self, i: usize) -> Vec<&str> {
        let mut names = vec![""; self.by_term.len()];
        for (term, &id) in &self.by_term {
            names[id as usize] = term;
        }
        self.candidates
            .get(i)
            .map(|ids| ids.iter().map(|&id| names[id as usize]).collect())
            .unwrap_or_default()
    }
}

/// Index terms of raw tokens already met by one caller (a query's candidates share most of
/// their words): [`term_counts_in`] looks a token up here before the shared [`TermMemo`].
pub type TokenTerms = HashMap<Box<str>, Option<Box<str>>, FastHash>;

/// The distinct index terms of a candidate's `title` and `text` (as the keyword index analyses
/// them, through `memo` when given), each with how often it occurs, in the order they first
/// occur: what [`CandidateTerms::push_counts`] takes, and what a caller can keep for a
/// candidate met again instead of analysing its text again.
pub fn term_counts(title: &str, text: &str, memo: Option<&TermMemo>) -> Vec<(Box<str>, u32)> {
    term_counts_in(title, text, memo, &mut TokenTerms::default())
}

/// [`term_counts`], taking the terms of tokens `seen` holds from it and adding the others.
pub fn term_counts_in(
    title: &str,
    text: &str,
    memo: Option<&TermMemo>,
    seen: &mut TokenTerms,
) -> Vec<(Box<str>, u32)> {
    let mut counts: Vec<(Box<str>, u32)> = Vec::new();
    let mut index: HashMap<String, u32, FastHash> = HashMap::default();
    let mut by_token: HashMap<&str, Option<usize>, FastHash> = HashMap::default();
    for part in [title, text] {
        for token in crag_text::tokens(part) {
            let slot = match by_token.get(token.text) {
                Some(&slot) => slot,
                None => {
                    if !seen.contains_key(token.text) {
                        let term: Option<Box<str>> = match memo {
                            Some(memo) => memo.with_term(token.text, |t| t.map(Box::from)),
                            None => crag_text::term(token.text).map(String::into_boxed_str),
                        };
                        seen.insert(token.text.into(), term);
                    }
                    let slot = seen.get(token.text).and_then(Option::as_deref).map(|term| {
                        let i = number(&mut index, term) as usize;
                        if i == counts.len() {
                            counts.push((term.into(), 0));
                        }
                        i
                    });
                    by_token.insert(token.text, slot);
                    slot
                }
            };
            if let Some(i) = slot {
                counts[i].1 += 1;
            }
        }
    }
    counts
}

/// `term`'s number in `by_term`, the next one when it is new.
fn number(by_term: &mut HashMap<String, u32, FastHash>, term: &str) -> u32 {
    if let Some(&id) = by_term.get(term) {
        return id;
    }
    let next = u32::try_from(by_term.len()).unwrap_or(u32::MAX);
    by_term.insert(term.to_owned(), next);
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_terms_are_the_index_terms_of_title_and_text() {
        let mut terms = CandidateTerms::new();
        terms.push("Heating", "the graphene sheets");
        let text = "The Engine's engines ENGINE: the engine runs, Running ran; r\u{e9}sum\u{e9}s 40 Heating";
        terms.push("Engines", text);
        assert_eq!(terms.len(), 2);
        assert_eq!(terms.terms(0), ["heat", "graphen", "sheet"]);
        // Remembered tokens give what the keyword index's analysis gives, in order.
        let mut expected = crag_text::analyze("Engines");
        expected.extend(crag_text::analyze(text));
        assert_eq!(terms.terms(1), expected);
        assert!(terms.terms(2).is_empty());
        let distinct: std::collections::HashSet<&str> =
            terms.terms(0).into_iter().chain(terms.terms(1)).collect();
        assert_eq!(terms.distinct_terms(), distinct.len());
    }

    #[test]
    fn counted_candidates_number_and_count_the_terms_as_pushed_ones() {
        let texts = [
            ("Heating", "the graphene sheets heat the Engine's engines"),
            ("", ""),
            (
                "Engines",
                "The ENGINE runs; Running ran, r\u{e9}sum\u{e9}s heat sheets heat",
            ),
        ];
        let sorted = |terms: &CandidateTerms, i: usize| {
            let mut t: Vec<String> = terms.terms(i).into_iter().map(str::to_owned).collect();
            t.sort();
            t
        };
        let mut plain = CandidateTerms::new();
        for (title, text) in texts {
            plain.push(title, text);
        }
        let memo = TermMemo::new(1_000);
        for memo in [None, Some(&memo), Some(&memo)] {
            let mut counted = CandidateTerms::new();
            let mut shared = CandidateTerms::new();
            let mut seen = TokenTerms::default();
            for (title, text) in texts {
                counted.push_counts(&term_counts(title, text, memo));
                shared.push_counts(&term_counts_in(title, text, memo, &mut seen));
            }
            assert_eq!(shared.by_term, plain.by_term);
            for i in 0..texts.len() {
                assert_eq!(sorted(&shared, i), sorted(&plain, i));
            }
            assert_eq!(counted.len(), plain.len());
            assert_eq!(counted.by_term, plain.by_term, "the same numbering");
            for i in 0..texts.len() {
                assert_eq!(sorted(&counted, i), sorted(&plain, i));
            }
        }
        let counts = term_counts(texts[2].0, texts[2].1, None);
        let heat = counts.iter().find(|(t, _)| &**t == "heat").unwrap();
        assert_eq!(heat.1, 2);
        assert_eq!(&*counts[0].0, "engin", "first occurrence first: {counts:?}");
        assert!(term_counts("", "", None).is_empty());
    }
}
