//! The knowledge graph of prose, without an LLM or an entity tagger: each chunk's key terms
//! (its most distinctive index terms) are the graph's nodes, two terms sharing a chunk are
//! joined, and a query is expanded by walking the graph from its own terms. Index terms stand
//! in for named entities (no entity tagger needed, so any language works), and the terms
//! reached are weighted rather than returned as unranked chunk sets.
//!
//! - [`key_terms`] picks a chunk's key terms by tf-idf, the document frequencies coming from
//!   the graph itself, so the choice adapts to each corpus as it grows.
//! - [`Expansion`] scores the terms reached from the query's seeds: a neighbour at one hop
//!   scores its association with the seed ([`association`], the cosine of their chunk sets:
//!   shared chunks / sqrt(product of their chunk counts)); at two hops, the product of the
//!   associations along the path times [`GraphConfig::decay`]. A term keeps its best path.
//! - [`graph_query`] is the weighted keyword query: the query's own terms at weight 1, each
//!   expansion term at [`GraphConfig::weight`] times its score.
//!
//! The caller reads the graph (a `TermGraph` port) between the steps; nothing here does IO.

use std::collections::{BTreeMap, HashMap, HashSet};

use crag_core::{TermNeighbour, WeightedTerm};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[knowledge_graph]`: building the term graph at ingest and expanding queries with it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GraphConfig {
    /// Keep the key terms of every ingested prose chunk in `<data_dir>/terms.sqlite` (or
    /// Postgres with `[storage] graphs`; an existing index is filled in by the next ingest);
    /// needed by `[crag.router] knowledge_graph`.
    pub enabled: bool,
    /// Key terms kept per chunk, by tf-idf (1..=256).
    pub terms_per_chunk: usize,
    /// Hops walked from the query's terms (1 or 2).
    pub hops: u8,
    /// Factor of a two-hop term's score, in (0, 1].
    pub decay: f32,
    /// Related terms added to a query at most (0..=100).
    pub max_terms: usize,
    /// Keyword-query weight of a related term of score 1 (query terms weigh 1), in (0, 1].
    pub weight: f32,
    /// Chunks two terms must share to be neighbours (at least 1).
    pub min_together: u64,
    /// Query terms that are key terms of more than this share of the chunks are not walked from, in
    /// (0, 1].
    pub max_seed_share: f32,
    /// One-hop terms walked on to the second hop.
    pub frontier: usize,
    /// Neighbours read per term, most shared chunks first (1..=10000).
    pub neighbours: usize,
}

impl Default for GraphConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            terms_per_chunk: 16,
            hops: 2,
            decay: 0.5,
            max_terms: 8,
            weight: 0.3,
            min_together: 2,
            max_seed_share: 0.05,
            frontier: 5,
            neighbours: 200,
        }
    }
}

impl GraphConfig {
    /// Checks ranges; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.terms_per_chunk == 0 || self.terms_per_chunk > 256 {
            return Err("knowledge_graph.terms_per_chunk must be within 1..=256".into());
        }
        if !(1..=2).contains(&self.hops) {
            return Err("knowledge_graph.hops must be 1 or 2".into());
        }
        if !(self.decay > 0.0 && self.decay <= 1.0) {
            return Err("knowledge_graph.decay must be within (0, 1]".into());
        }
        if self.max_terms > 100 {
            return Err("knowledge_graph.max_terms must be at most 100".into());
        }
        if !(self.weight > 0.0 && self.weight <= 1.0) {
            return Err("knowledge_graph.weight must be within (0, 1]".into());
        }
        if self.min_together == 0 {
            return Err("knowledge_graph.min_together must be at least 1".into());
        }
        if !(self.max_seed_share > 0.0 && self.max_seed_share <= 1.0) {
            return Err("knowledge_graph.max_seed_share must be within (0, 1]".into());
        }
        if self.neighbours == 0 || self.neighbours > 10_000 {
            return Err("knowledge_graph.neighbours must be within 1..=10000".into());
        }
        Ok(())
    }
}

/// Whether `term` can be a key term: two characters or more, at least one a letter (numbers
/// alone are not entities).
fn keyable(term: &str) -> bool {
    term.chars().nth(1).is_some() && term.chars().any(char::is_alphabetic)
}

/// The distinct terms of `tokens` in order of first occurrence, keyable ones only.
pub fn distinct_terms(tokens: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    tokens
        .iter()
        .filter(|t| keyable(t) && seen.insert(t.as_str()))
        .cloned()
        .collect()
}

/// The key terms of a chunk: its index terms `tokens` (in order, duplicates kept) scored by
/// (1 + ln tf) × BM25's idf, where `frequency(term)` is the number of chunks holding the term
/// among `chunks` (both may include the chunk itself); the best `k`, ties by term. Terms of
/// one character or without a letter are never key terms.
pub fn key_terms(
    tokens: &[String],
    frequency: impl Fn(&str) -> u64,
    chunks: u64,
    k: usize,
) -> Vec<String> {
    let mut tf: BTreeMap<&str, u32> = BTreeMap::new();
    for t in tokens.iter().filter(|t| keyable(t)) {
        *tf.entry(t.as_str()).or_default() += 1;
    }
    let n = chunks as f64;
    let mut scored: Vec<(f64, &str)> = tf
        .into_iter()
        .map(|(term, count)| {
            let df = (frequency(term) as f64).min(n);
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            ((1.0 + f64::from(count).ln()) * idf, term)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(k)
        .map(|(_, t)| t.to_owned())
        .collect()
}

/// Whether a term that is a key term of `frequency` of the graph's `chunks` can be walked from:
/// at most `max_seed_share` of them (one chunk always can). More common terms relate to
/// everything.
pub fn walkable(frequency: u64, chunks: u64, config: &GraphConfig) -> bool {
    let cap = ((chunks as f64) * f64::from(config.max_seed_share)).max(1.0);
    (frequency as f64) <= cap
}

/// The query terms to walk from: those in at least one chunk and [`walkable`], in the order
/// given. `frequencies[i]` is the frequency of `terms[i]`.
pub fn seeds(
    terms: &[String],
    frequencies: &[u64],
    chunks: u64,
    config: &GraphConfig,
) -> Vec<(String, u64)> {
    terms
        .iter()
        .zip(frequencies)
        .filter(|(_, f)| **f > 0 && walkable(**f, chunks, config))
        .map(|(t, f)| (t.clone(), *f))
        .collect()
}

/// How strongly two terms go together: shared chunks / sqrt(chunks of a × chunks of b), in
/// [0, 1]; 0 when either count is 0.
pub fn association(together: u64, a: u64, b: u64) -> f32 {
    if a == 0 || b == 0 {
        return 0.0;
    }
    let score = together as f64 / ((a as f64) * (b as f64)).sqrt();
    score.clamp(0.0, 1.0) as f32
}

/// A term reached from the query.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpansionTerm {
    /// The index term.
    pub term: String,
    /// Its score in (0, 1]: the best path's product of associations (and decay).
    pub score: f32,
    /// Hops from the query (1 or 2).
    pub hops: u8,
    /// The term it was reached from on its best path.
    pub via: String,
    /// In how many chunks it is a key term.
    pub frequency: u64,
}

/// The terms reached so far from a query's seeds.
#[derive(Debug, Clone, Default)]
pub struct Expansion {
    reached: HashMap<String, ExpansionTerm>,
    query: HashSet<String>,
}

impl Expansion {
    /// Starts an expansion of a query with these (analysed) terms, which are never added.
    pub fn new(query_terms: &[String]) -> Self {
        Self {
            reached: HashMap::new(),
            query: query_terms.iter().cloned().collect(),
        }
    }

    /// Adds the `neighbours` of `from` (score `from_score`, key term of `from_frequency`
    /// chunks), reached at `hop` (1 or 2; hop 2 is scaled by `decay`).
    pub fn add(
        &mut self,
        from: &str,
        from_score: f32,
        from_frequency: u64,
        neighbours: &[TermNeighbour],
        hop: u8,
        decay: f32,
    ) {
        let factor = if hop >= 2 { decay } else { 1.0 };
        for n in neighbours {
            if self.query.contains(&n.term) || !keyable(&n.term) {
                continue;
            }
            let score = from_score * association(n.together, from_frequency, n.frequency) * factor;
            if !(score > 0.0 && score.is_finite()) {
                continue;
            }
            let better = self.reached.get(&n.term).is_none_or(|e| score > e.score);
            if better {
                self.reached.insert(
                    n.term.clone(),
                    ExpansionTerm {
                        term: n.term.clone(),
                        score,
                        hops: hop,
                        via: from.to_owned(),
                        frequency: n.frequency,
                    },
                );
            }
        }
    }

    /// The best `n` terms reached in one hop, to walk on from.
    pub fn frontier(&self, n: usize) -> Vec<ExpansionTerm> {
        let mut one: Vec<ExpansionTerm> = self
            .reached
            .values()
            .filter(|e| e.hops == 1)
            .cloned()
            .collect();
        sort(&mut one);
        one.truncate(n);
        one
    }

    /// The best `n` terms, highest score first, ties by term.
    pub fn top(&self, n: usize) -> Vec<ExpansionTerm> {
        let mut all: Vec<ExpansionTerm> = self.reached.values().cloned().collect();
        sort(&mut all);
        all.truncate(n);
        all
    }
}

fn sort(terms: &mut [ExpansionTerm]) {
    terms.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.term.cmp(&b.term)));
}

/// The weighted keyword query of an expansion: every query token at weight 1 (duplicates
/// kept, as the plain query scores them) and each expansion term at `weight` × its score.
pub fn graph_query(
    tokens: &[String],
    expansion: &[ExpansionTerm],
    weight: f32,
) -> Vec<WeightedTerm> {
    tokens
        .iter()
        .map(|t| WeightedTerm {
            term: t.clone(),
            weight: 1.0,
        })
        .chain(expansion.iter().map(|e| WeightedTerm {
            term: e.term.clone(),
            weight: weight * e.score,
        }))
        .filter(|t| t.weight > 0.0 && t.weight.is_finite())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|t| (*t).to_owned()).collect()
    }

    fn n(term: &str, together: u64, frequency: u64) -> TermNeighbour {
        TermNeighbour {
            term: term.into(),
            together,
            frequency,
        }
    }

    #[test]
    fn key_terms_prefer_rare_and_repeated_terms() {
        let tokens = s(&["cell", "p53", "cell", "mdm2", "p53", "p53", "a", "42"]);
        let df = |t: &str| match t {
            "cell" => 900,
            "p53" => 10,
            "mdm2" => 3,
            _ => 0,
        };
        assert_eq!(key_terms(&tokens, df, 1000, 2), s(&["p53", "mdm2"]));
        assert_eq!(
            key_terms(&tokens, df, 1000, 10),
            s(&["p53", "mdm2", "cell"]),
            "one-letter and number-only terms are never key terms"
        );
        assert!(key_terms(&tokens, df, 1000, 0).is_empty());
        assert!(key_terms(&[], df, 0, 5).is_empty());
    }

    #[test]
    fn seeds_skip_unknown_and_common_terms() {
        let config = GraphConfig::default();
        let got = seeds(&s(&["cell", "p53", "zzz"]), &[900, 10, 0], 1000, &config);
        assert_eq!(got, vec![("p53".to_owned(), 10)]);
        // In a tiny graph one chunk is always allowed.
        let got = seeds(&s(&["p53"]), &[1], 3, &config);
        assert_eq!(got, vec![("p53".to_owned(), 1)]);
    }

    #[test]
    fn association_is_the_cosine_of_chunk_sets() {
        assert_eq!(association(2, 2, 2), 1.0);
        assert!((association(1, 4, 1) - 0.5).abs() < 1e-6);
        assert_eq!(association(1, 0, 3), 0.0);
        assert_eq!(association(9, 1, 1), 1.0, "clamped");
    }

    #[test]
    fn two_hops_decay_and_each_term_keeps_its_best_path() {
        let mut e = Expansion::new(&s(&["p53"]));
        e.add(
            "p53",
            1.0,
            4,
            &[n("mdm2", 2, 4), n("p53", 4, 4), n("tumour", 1, 16)],
            1,
            0.5,
        );
        let frontier = e.frontier(5);
        assert_eq!(frontier.len(), 2, "the query term itself is never added");
        assert_eq!(frontier[0].term, "mdm2");
        assert!((frontier[0].score - 0.5).abs() < 1e-6);
        assert!((frontier[1].score - 0.125).abs() < 1e-6);
        // From mdm2 (score 0.5): nutlin at 0.5 × 1 × 0.5; tumour at 0.5 × 1 × 0.5, better
        // than its one-hop 0.125; p53 is the query.
        e.add(
            "mdm2",
            0.5,
            4,
            &[n("nutlin", 4, 4), n("tumour", 8, 16), n("p53", 4, 4)],
            2,
            0.5,
        );
        // A worse path to mdm2 does not replace its best one.
        e.add("tumour", 0.25, 16, &[n("mdm2", 1, 4)], 2, 0.5);
        let top = e.top(10);
        let got: Vec<(&str, u8, &str)> = top
            .iter()
            .map(|t| (t.term.as_str(), t.hops, t.via.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("mdm2", 1, "p53"),
                ("nutlin", 2, "mdm2"),
                ("tumour", 2, "mdm2")
            ]
        );
        assert!((top[0].score - 0.5).abs() < 1e-6);
        assert!((top[1].score - 0.25).abs() < 1e-6);
        assert!((top[2].score - 0.25).abs() < 1e-6, "ties by term");
        assert_eq!(e.top(1).len(), 1);
    }

    #[test]
    fn the_query_keeps_its_terms_at_weight_one() {
        let expansion = [ExpansionTerm {
            term: "mdm2".into(),
            score: 0.5,
            hops: 1,
            via: "p53".into(),
            frequency: 4,
        }];
        let q = graph_query(&s(&["p53", "p53", "cancer"]), &expansion, 0.3);
        let pairs: Vec<(&str, f32)> = q.iter().map(|t| (t.term.as_str(), t.weight)).collect();
        assert_eq!(
            pairs,
            vec![("p53", 1.0), ("p53", 1.0), ("cancer", 1.0), ("mdm2", 0.15)]
        );
    }

    #[test]
    fn the_defaults_are_valid_and_ranges_are_checked() {
        assert_eq!(GraphConfig::default().validate(), Ok(()));
        for bad in [
            GraphConfig {
                hops: 3,
                ..GraphConfig::default()
            },
            GraphConfig {
                decay: 0.0,
                ..GraphConfig::default()
            },
            GraphConfig {
                weight: f32::NAN,
                ..GraphConfig::default()
            },
            GraphConfig {
                terms_per_chunk: 0,
                ..GraphConfig::default()
            },
            GraphConfig {
                min_together: 0,
                ..GraphConfig::default()
            },
            GraphConfig {
                max_seed_share: 1.5,
                ..GraphConfig::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn scores_stay_within_zero_and_one(
            edges in proptest::collection::vec(("[a-z]{2,4}", 0u64..50, 0u64..50), 0..30),
            seed_frequency in 0u64..50,
        ) {
            let neighbours: Vec<TermNeighbour> =
                edges.iter().map(|(t, a, b)| n(t, *a, *b)).collect();
            let mut e = Expansion::new(&s(&["seed"]));
            e.add("seed", 1.0, seed_frequency, &neighbours, 1, 0.5);
            for m in e.frontier(3) {
                e.add(&m.term, m.score, m.frequency, &neighbours, 2, 0.5);
            }
            for t in e.top(100) {
                prop_assert!(t.score > 0.0 && t.score <= 1.0, "{t:?}");
                prop_assert!(t.term != "seed");
            }
        }
    }
}
