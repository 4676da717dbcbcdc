//! Knowledge refinement: decompose documents into strips, keep the relevant ones, recompose
//! (CRAG paper, LLM-free).

use std::collections::{HashMap, HashSet};

use crag_text::StemTargets;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::strips::{split_strips, Strip};
use crag_expansion::tokens::{content_terms, normalize, stem, tokens};

/// Tunables of [`refine`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RefineConfig {
    /// Sentences per strip (default 3; 0 counts as 1).
    pub sentences_per_strip: usize,
    /// Strips scoring below this are dropped (default 0.2: with [`lexical_score`], a strip
    /// must contain at least a fifth of the query's content terms).
    pub min_score: f32,
    /// At most this many strips are kept over all documents (default 10).
    pub max_strips: usize,
    /// With a language model that refines (`[llm] refine`): the best strips by lexical score
    /// shown to it to choose from (default 8, 1..=20).
    pub llm_candidates: usize,
}

impl Default for RefineConfig {
    fn default() -> Self {
        Self {
            sentences_per_strip: 3,
            min_score: 0.2,
            max_strips: 10,
            llm_candidates: 8,
        }
    }
}

/// A strip kept by [`refine`], with the document it came from and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredStrip {
    /// Index of the source text in the input of [`refine`].
    pub source_index: usize,
    /// The strip, with its byte range in the source text.
    pub strip: Strip,
    /// Relevance score given by the caller's scorer.
    pub score: f32,
    /// Tokens of the strip's text, by the caller's counter.
    pub tokens: usize,
}

/// Returns the lexical relevance of `strip` to `query` in `[0, 1]`: the fraction of the
/// query's distinct content terms (see [`crate::content_terms`]) that occur in the strip,
/// both sides lightly stemmed ("effects" meets "effect"). A query made only of stop words is
/// compared on all its words; an empty query scores 0.
pub fn lexical_score(query: &str, strip: &str) -> f32 {
    LexicalScorer::new(query).score(strip)
}

/// [`lexical_score`] of one query over many strips: the query is analysed once, and each
/// distinct word of the strips is stemmed once.
#[derive(Debug, Clone)]
pub struct LexicalScorer {
    /// The query's stemmed terms, numbered.
    wanted: HashMap<String, usize>,
    /// What each word seen so far is: the number of the query term it stems to, if any.
    seen: HashMap<String, Option<usize>>,
    /// Which words could stem to a query term: the others are not stemmed.
    targets: StemTargets,
}

impl LexicalScorer {
    /// Analyses `query` (its content terms, or all its words when it has none).
    pub fn new(query: &str) -> Self {
        let mut terms: Vec<String> = content_terms(query).iter().map(|t| stem(t)).collect();
        if terms.is_empty() {
            terms = tokens(query)
                .into_iter()
                .map(|t| stem(&normalize(t)))
                .collect();
        }
        let mut wanted = HashMap::new();
        for term in terms {
            let next = wanted.len();
            wanted.entry(term).or_insert(next);
        }
        Self {
            targets: StemTargets::new(wanted.keys().map(String::as_str)),
            wanted,
            seen: HashMap::new(),
        }
    }

    /// The share of the query's terms that occur in `strip` (see [`lexical_score`]).
    pub fn score(&mut self, strip: &str) -> f32 {
        if self.wanted.is_empty() {
            return 0.0;
        }
        let mut found = HashSet::new();
        for token in tokens(strip) {
            let term = match self.seen.get(token) {
                Some(term) => *term,
                None => {
                    let word = normalize(token);
                    let term = if self.targets.may_stem(&word) {
                        self.wanted.get(&stem(&word)).copied()
                    } else {
                        None
                    };
                    self.seen.insert(token.to_owned(), term);
                    term
                }
            };
            if let Some(term) = term {
                found.insert(term);
                if found.len() == self.wanted.len() {
                    break;
                }
            }
        }
        (found.len() as f32 / self.wanted.len() as f32).clamp(0.0, 1.0)
    }
}

/// Refines documents down to their relevant strips (decompose, filter, recompose).
///
/// Splits each text into strips of `config.sentences_per_strip` sentences, scores each with
/// `score(strip_text)`, keeps strips scoring at least `config.min_score` (NaN never does),
/// takes them best first (ties: earlier document, then earlier strip) while fewer than
/// `config.max_strips` are kept, skipping any that would take the total of `tokens` over
/// `budget`, and returns the kept strips, each with its count of `tokens`, regrouped by
/// `source_index` in text order. Never exceeds the budget; empty input gives empty output.
pub fn refine(
    texts: &[&str],
    config: &RefineConfig,
    budget: usize,
    mut score: impl FnMut(&str) -> f32,
    mut tokens: impl FnMut(&str) -> usize,
) -> Vec<ScoredStrip> {
    let mut candidates: Vec<ScoredStrip> = Vec::new();
    for (source_index, text) in texts.iter().enumerate() {
        for strip in split_strips(text, config.sentences_per_strip) {
            let s = score(&strip.text);
            if s >= config.min_score {
                candidates.push(ScoredStrip {
                    source_index,
                    strip,
                    score: s,
                    tokens: 0,
                });
            }
        }
    }
    // Stable: equal scores keep document order, then strip order.
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut kept = Vec::new();
    let mut used = 0usize;
    for candidate in candidates {
        if kept.len() >= config.max_strips {
            break;
        }
        let n = tokens(&candidate.strip.text);
        match used.checked_add(n) {
            Some(total) if total <= budget => {
                used = total;
                kept.push(ScoredStrip {
                    tokens: n,
                    ..candidate
                });
            }
            _ => {}
        }
    }
    kept.sort_by_key(|s| (s.source_index, s.strip.start));
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::estimate_tokens;
    use proptest::prelude::*;

    const QUERY: &str = "What are the effects of vitamin D on bone density?";

    #[test]
    fn lexical_score_is_the_share_of_query_terms_present() {
        assert_eq!(
            lexical_score(QUERY, "Vitamin D raises bone density in older adults."),
            0.8
        );
        assert_eq!(
            lexical_score(QUERY, "The effect of vitamin D on the densities of bones."),
            1.0
        );
        assert_eq!(lexical_score(QUERY, "The weather was sunny."), 0.0);
        assert_eq!(lexical_score("what is it", "It is what it is."), 1.0);
        assert_eq!(lexical_score("", "anything"), 0.0);
        assert_eq!(lexical_score("?!", "anything"), 0.0);
        assert_eq!(lexical_score(QUERY, ""), 0.0);
    }

    #[test]
    fn keeps_the_relevant_sentence_and_drops_the_irrelevant_one() {
        let doc = "Vitamin D increases bone density by improving calcium absorption. \
                   The museum is open on Sundays from ten to five.";
        let config = RefineConfig {
            sentences_per_strip: 1,
            ..RefineConfig::default()
        };
        let kept = refine(
            &[doc],
            &config,
            8000,
            |s| lexical_score(QUERY, s),
            estimate_tokens,
        );
        assert_eq!(kept.len(), 1);
        assert_eq!(
            kept[0].strip.text,
            "Vitamin D increases bone density by improving calcium absorption."
        );
        assert_eq!(kept[0].source_index, 0);
        assert_eq!(kept[0].score, 0.8);
    }

    #[test]
    fn best_first_within_limits_then_recomposed_in_text_order() {
        let docs = [
            "Alpha. Beta gamma. Alpha beta gamma.",
            "Gamma. Unrelated text.",
        ];
        let query = "alpha beta gamma";
        let config = RefineConfig {
            sentences_per_strip: 1,
            min_score: 0.3,
            max_strips: 3,
            ..RefineConfig::default()
        };
        let kept = refine(
            &docs,
            &config,
            100,
            |s| lexical_score(query, s),
            estimate_tokens,
        );
        let got: Vec<(usize, &str)> = kept
            .iter()
            .map(|s| (s.source_index, s.strip.text.as_str()))
            .collect();
        // "Alpha." and "Gamma." tie at 1/3; the first document's wins the last slot.
        assert_eq!(
            got,
            [(0, "Alpha."), (0, "Beta gamma."), (0, "Alpha beta gamma.")]
        );

        // A budget of 4 tokens: "Alpha beta gamma." (3) first, "Beta gamma." (2) does not fit,
        // "Alpha." (1) does, and then nothing more.
        let kept = refine(
            &docs,
            &config,
            4,
            |s| lexical_score(query, s),
            estimate_tokens,
        );
        let got: Vec<&str> = kept.iter().map(|s| s.strip.text.as_str()).collect();
        assert_eq!(got, ["Alpha.", "Alpha beta gamma."]);
    }

    #[test]
    fn degenerate_inputs() {
        let config = RefineConfig::default();
        assert!(refine(&[], &config, 100, |_| 1.0, |_| 1).is_empty());
        assert!(refine(&["", "  "], &config, 100, |_| 1.0, |_| 1).is_empty());
        assert!(refine(&["Some text."], &config, 100, |_| f32::NAN, |_| 1).is_empty());
        assert!(refine(&["Some text."], &config, 0, |_| 1.0, |_| 1).is_empty());
        let none = RefineConfig {
            max_strips: 0,
            ..config
        };
        assert!(refine(&["Some text."], &none, 100, |_| 1.0, |_| 1).is_empty());
    }

    #[test]
    fn config_serde_defaults_and_unknown_fields() {
        let c: RefineConfig = serde_json::from_str(r#"{"min_score": 0.5}"#).unwrap();
        assert_eq!(
            c,
            RefineConfig {
                min_score: 0.5,
                ..RefineConfig::default()
            }
        );
        assert!(serde_json::from_str::<RefineConfig>(r#"{"min_scor": 0.5}"#).is_err());
    }

    proptest! {
        #[test]
        fn lexical_scores_stay_in_range(query in "\\PC{0,80}", strip in "\\PC{0,80}") {
            let score = lexical_score(&query, &strip);
            prop_assert!((0.0..=1.0).contains(&score));
            prop_assert_eq!(
                lexical_score(&query, &query) > 0.0,
                !crag_expansion::tokens::tokens(&query).is_empty()
            );
        }

        #[test]
        fn never_exceeds_the_budget_or_max_strips(
            docs in prop::collection::vec("[a-d .!?\n]{0,120}", 0..5),
            per_strip in 0usize..4,
            max_strips in 0usize..8,
            budget in 0usize..30,
        ) {
            let texts: Vec<&str> = docs.iter().map(String::as_str).collect();
            let config = RefineConfig { sentences_per_strip: per_strip, min_score: 0.2, max_strips, ..RefineConfig::default() };
            let kept = refine(&texts, &config, budget, |s| lexical_score("a b", s), estimate_tokens);
            let used: usize = kept.iter().map(|s| estimate_tokens(&s.strip.text)).sum();
            prop_assert!(used <= budget);
            prop_assert!(kept.len() <= max_strips);
            prop_assert!(kept.windows(2).all(|w| (w[0].source_index, w[0].strip.start) < (w[1].source_index, w[1].strip.start)));
            for s in &kept {
                prop_assert!(s.score >= 0.2);
                prop_assert_eq!(&texts[s.source_index][s.strip.start..s.strip.end], s.strip.text.as_str());
                prop_assert_eq!(s.tokens, estimate_tokens(&s.strip.text));
            }
        }

        #[test]
        fn a_scorer_reused_over_strips_scores_as_the_definition(
            query in "[a-zA-Z' ]{0,40}",
            strips in prop::collection::vec("[a-zA-Z .,'-]{0,80}", 0..6),
        ) {
            let mut scorer = LexicalScorer::new(&query);
            for strip in strips.iter().chain(&strips) {
                prop_assert_eq!(scorer.score(strip), by_definition(&query, strip));
            }
        }

        #[test]
        fn a_scorer_over_inflected_words_scores_as_the_definition(
            query in prop::collection::vec(0usize..64, 1..6),
            strips in prop::collection::vec(prop::collection::vec(0usize..64, 0..30), 0..6),
        ) {
            // Words Snowball changes more than a suffix of, and inflected forms.
            const INFLECTED: &[&str] = &[
                "die", "lies", "hope", "generous", "vitamins", "vitamin", "fractures",
                "fractured", "densities", "density", "studies", "studied", "adults", "older",
                "risk", "risks", "patients", "agree", "cry", "tie", "is", "as", "d", "b",
                "operate", "rational", "effects", "effect", "bones", "bone", "measured",
            ];
            let words: Vec<&str> =
                crag_text::STEMMING_EDGE_CASES.iter().chain(INFLECTED).copied().collect();
            let query: Vec<&str> = query.iter().map(|i| words[i % words.len()]).collect();
            let query = query.join(" ");
            let mut scorer = LexicalScorer::new(&query);
            for strip in &strips {
                let strip: Vec<&str> = strip.iter().map(|i| words[i % words.len()]).collect();
                let strip = strip.join(" ");
                prop_assert_eq!(scorer.score(&strip), by_definition(&query, &strip));
            }
        }
    }

    /// The share of the query's stemmed terms found among the strip's, set against set.
    fn by_definition(query: &str, strip: &str) -> f32 {
        let mut wanted: HashSet<String> = content_terms(query).iter().map(|t| stem(t)).collect();
        if wanted.is_empty() {
            wanted = tokens(query)
                .into_iter()
                .map(|t| stem(&normalize(t)))
                .collect();
        }
        if wanted.is_empty() {
            return 0.0;
        }
        let present: HashSet<String> = tokens(strip)
            .into_iter()
            .map(|t| stem(&normalize(t)))
            .collect();
        let hits = wanted.iter().filter(|t| present.contains(*t)).count();
        hits as f32 / wanted.len() as f32
    }
}
