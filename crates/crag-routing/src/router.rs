//! The query router.

use crate::arithmetic::is_arithmetic;
use crate::compare::{comparison, normalize_keywords};
use crate::config::{GraphRouting, RouterConfig};
use crate::decompose::{clauses, enumeration, finish, questions, resolve_pronouns};
use crate::relational::relational_cue;
use crate::route::{Route, RoutingDecision};
use crate::small_talk::small_talk;
use crate::words::{words, Word};

/// Classifies queries into a retrieval strategy with rules (no model, microseconds).
#[derive(Debug, Clone)]
pub struct QueryRouter {
    config: RouterConfig,
    /// `config.analysis_keywords`, trimmed and lowercase.
    keywords: Vec<String>,
}

impl Default for QueryRouter {
    fn default() -> Self {
        Self::new(RouterConfig::default())
    }
}

impl QueryRouter {
    /// Creates a router with `config`.
    pub fn new(config: RouterConfig) -> Self {
        Self {
            keywords: normalize_keywords(&config.analysis_keywords),
            config,
        }
    }

    /// Returns the router's configuration.
    pub fn config(&self) -> &RouterConfig {
        &self.config
    }

    /// Classifies `query`. Rules, first match wins:
    ///
    /// 1. no letters or digits, small talk (the whole query is greetings, thanks, farewells,
    ///    "how are you", "ok" and fillers), or pure arithmetic: [`Route::NoRetrieval`];
    /// 2. several parts: [`Route::MultiStep`] with the parts as sub-queries, for an
    ///    enumeration ("1) A 2) B", bullet lines), several questions, a comparison or
    ///    analysis of several items ("compare A and B", "difference between A and B",
    ///    "A vs B"), clauses joined by "and how/why/what ..." or ", then", or a long query
    ///    (at least `multi_step_min_words` words) made of several sentences;
    /// 3. with [`RouterConfig::knowledge_graph`] `all`, or `relational` and a question about
    ///    how things relate ("related to", "role of"...): [`Route::KnowledgeGraph`];
    /// 4. otherwise [`Route::Single`].
    ///
    /// Never panics; the reason names the rule that fired.
    pub fn classify(&self, query: &str) -> RoutingDecision {
        let words = words(query);
        if !words.iter().any(Word::is_real) {
            return RoutingDecision::new(Route::NoRetrieval, "no words to search for");
        }
        if self.config.detect_small_talk {
            if let Some(kind) = small_talk(&words) {
                return RoutingDecision::new(
                    Route::NoRetrieval,
                    format!("{}: answered without retrieval", kind.label()),
                );
            }
        }
        if self.config.detect_arithmetic && is_arithmetic(query) {
            return RoutingDecision::new(
                Route::NoRetrieval,
                "pure arithmetic: answered without retrieval",
            );
        }
        if let Some(decision) = self.multi_step(query, &words) {
            return decision;
        }
        match self.config.knowledge_graph {
            GraphRouting::Off => {}
            GraphRouting::All => {
                return RoutingDecision::new(
                    Route::KnowledgeGraph,
                    "single retrieval expanded by the knowledge graph (knowledge_graph = all)",
                );
            }
            GraphRouting::Relational => {
                if let Some(cue) = relational_cue(&words) {
                    return RoutingDecision::new(
                        Route::KnowledgeGraph,
                        format!("question about a relation (\"{cue}\"): knowledge graph"),
                    );
                }
            }
        }
        let count = query.split_whitespace().count();
        if count >= self.config.multi_step_min_words {
            RoutingDecision::new(
                Route::Single,
                format!("long query ({count} words) without separable parts: single retrieval"),
            )
        } else {
            RoutingDecision::new(Route::Single, "standard query: single retrieval")
        }
    }

    fn multi_step(&self, query: &str, words: &[Word<'_>]) -> Option<RoutingDecision> {
        let max = self.config.max_sub_queries;
        if max < 2 {
            return None;
        }
        let decide = |parts: Vec<String>, what: &str| {
            let parts = finish(parts, max)?;
            Some(RoutingDecision {
                route: Route::MultiStep,
                reason: format!("{what} in {} parts: one retrieval per part", parts.len()),
                sub_queries: parts,
            })
        };
        let resolved = |mut parts: Vec<String>| {
            resolve_pronouns(&mut parts);
            parts
        };
        if let Some(d) = enumeration(query, words).and_then(|p| decide(p, "enumeration")) {
            return Some(d);
        }
        if let Some(d) =
            questions(query, words).and_then(|p| decide(resolved(p), "several questions"))
        {
            return Some(d);
        }
        if let Some(d) = comparison(words, &self.keywords)
            .and_then(|p| decide(p, "comparison or analysis of several items"))
        {
            return Some(d);
        }
        let (parts, joined) = clauses(query, words);
        if joined {
            if let Some(d) = decide(resolved(parts.clone()), "multi-part question") {
                return Some(d);
            }
        }
        let count = query.split_whitespace().count();
        if count >= self.config.multi_step_min_words {
            return decide(resolved(parts), &format!("long query ({count} words)"));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn classify(q: &str) -> RoutingDecision {
        QueryRouter::default().classify(q)
    }

    #[test]
    fn the_knowledge_graph_route_is_off_by_default_and_follows_its_setting() {
        let q = "How is p53 related to apoptosis?";
        assert_eq!(classify(q).route, Route::Single);
        let router = |knowledge_graph| {
            QueryRouter::new(RouterConfig {
                knowledge_graph,
                ..RouterConfig::default()
            })
        };
        let relational = router(GraphRouting::Relational);
        let d = relational.classify(q);
        assert_eq!(d.route, Route::KnowledgeGraph);
        assert!(d.reason.contains("related to"), "{}", d.reason);
        assert_eq!(
            relational.classify("what does p53 do").route,
            Route::Single,
            "no relation asked"
        );
        let all = router(GraphRouting::All);
        assert_eq!(
            all.classify("what does p53 do").route,
            Route::KnowledgeGraph
        );
        assert_eq!(
            all.classify("thanks!").route,
            Route::NoRetrieval,
            "small talk first"
        );
        assert_eq!(
            all.classify("compare tantivy and lucene").route,
            Route::MultiStep,
            "several parts first"
        );
    }

    #[test]
    fn no_retrieval_examples() {
        for (q, reason) in [
            ("hi", "greeting"),
            ("hello there", "greeting"),
            ("Good morning!", "greeting"),
            ("Hey! How's it going?", "greeting"),
            ("thanks!", "thanks"),
            ("thank you so much", "thanks"),
            ("Thanks for your help 🙏", "thanks"),
            ("bye", "farewell"),
            ("See you later, have a nice day", "farewell"),
            ("ok", "acknowledgement"),
            ("2 + 2", "arithmetic"),
            ("what is 12*7?", "arithmetic"),
            ("How much is 15% of 80?", "arithmetic"),
            ("", "no words"),
            ("?!", "no words"),
            ("👋", "no words"),
        ] {
            let d = classify(q);
            assert_eq!(d.route, Route::NoRetrieval, "{q}: {}", d.reason);
            assert!(d.reason.contains(reason), "{q}: {}", d.reason);
            assert!(d.sub_queries.is_empty());
        }
    }

    #[test]
    fn single_examples() {
        for q in [
            "hello world program in rust",
            "thanks to CRISPR, gene editing became cheap",
            "hi, what is a monad?",
            "what is 2 + 2 in binary",
            "good morning routine ideas",
            "calculate the area of a circle",
            "What is Rust's ownership model?",
            "how do I reverse a linked list in python",
            "explain async function",
            "What is the relationship between sleep and memory?",
            "Is Rust or Go better for CLI tools?",
            "how to set up the VS Code debugger for rust",
            "salt and pepper",
            "How and why does Rust prevent data races?",
        ] {
            let d = classify(q);
            assert_eq!(d.route, Route::Single, "{q}: {d:?}");
            assert!(d.sub_queries.is_empty());
            assert_eq!(d.reason, "standard query: single retrieval");
        }
    }

    #[test]
    fn multi_step_examples() {
        for (q, expected, reason) in [
            (
                "Compare PostgreSQL and MySQL for write-heavy workloads",
                vec!["PostgreSQL for write-heavy workloads", "MySQL for write-heavy workloads"],
                "comparison",
            ),
            (
                "What is the difference between TCP and UDP?",
                vec!["TCP", "UDP"],
                "comparison",
            ),
            ("Rust vs Go", vec!["Rust", "Go"], "comparison"),
            (
                "What is Rust? Why is it fast?",
                vec!["What is Rust?", "Why is Rust fast?"],
                "several questions",
            ),
            (
                "What are statins and how do they affect cholesterol, and why do doctors prescribe them?",
                vec![
                    "What are statins",
                    "how do statins affect cholesterol",
                    "why do doctors prescribe statins?",
                ],
                "multi-part question",
            ),
            (
                "Explain the following: 1) ownership 2) borrowing 3) lifetimes",
                vec!["ownership", "borrowing", "lifetimes"],
                "enumeration",
            ),
            (
                "What is A? What is B? What is C? What is D? What is E?",
                vec!["What is A?", "What is B?", "What is C?", "What is D? What is E?"],
                "several questions",
            ),
        ] {
            let d = classify(q);
            assert_eq!(d.route, Route::MultiStep, "{q}: {}", d.reason);
            assert_eq!(d.sub_queries, expected, "{q}");
            assert!(d.reason.contains(reason), "{q}: {}", d.reason);
        }
    }

    #[test]
    fn long_queries() {
        let long = "I am building a web service in Rust that receives thousands of requests \
                    per second from mobile clients. The service stores sessions in Redis and \
                    writes audit logs to Postgres. How should I structure the connection pools?";
        assert!(long.split_whitespace().count() >= 31);
        let d = classify(long);
        assert_eq!(d.route, Route::MultiStep, "{}", d.reason);
        assert_eq!(d.sub_queries.len(), 3);
        assert_eq!(
            d.sub_queries[2],
            "How should I structure the connection pools?"
        );
        assert!(d.reason.starts_with("long query ("), "{}", d.reason);

        let one_sentence = "word ".repeat(40);
        let d = classify(&one_sentence);
        assert_eq!(d.route, Route::Single);
        assert!(d.reason.contains("without separable parts"), "{}", d.reason);

        // Below the threshold, sentences alone do not make a query multi-step.
        let short = "I use Postgres. How should I size the pool?";
        assert_eq!(classify(short).route, Route::Single);
        let lower = QueryRouter::new(RouterConfig {
            multi_step_min_words: 5,
            ..RouterConfig::default()
        });
        assert_eq!(lower.classify(short).route, Route::MultiStep);
    }

    #[test]
    fn config_switches() {
        let off = QueryRouter::new(RouterConfig {
            detect_small_talk: false,
            detect_arithmetic: false,
            max_sub_queries: 1,
            ..RouterConfig::default()
        });
        for q in ["hi", "2 + 2", "Compare A and B", "What is X? What is Y?"] {
            let d = off.classify(q);
            assert_eq!(d.route, Route::Single, "{q}");
            assert!(d.sub_queries.is_empty());
        }
        let no_keywords = QueryRouter::new(RouterConfig {
            analysis_keywords: Vec::new(),
            ..RouterConfig::default()
        });
        assert_eq!(
            no_keywords.classify("Compare Rust and Go").route,
            Route::Single
        );
        assert_eq!(no_keywords.classify("Rust vs Go").route, Route::MultiStep);
    }

    #[test]
    fn repetitive_long_queries_stay_cheap() {
        // 8 KiB of cue words: each frame tries a bounded number of occurrences. This asserts
        // the outcome; the bound is what keeps it from being quadratic.
        let router = QueryRouter::new(RouterConfig {
            analysis_keywords: vec![" Compare ".into(), String::new()],
            ..RouterConfig::default()
        });
        for unit in [
            "compare ",
            "difference between ",
            "vs ",
            "and how ",
            "1) ",
            "it? ",
        ] {
            let q = unit.repeat(8 * 1024 / unit.len());
            let d = router.classify(&q);
            assert!(d.sub_queries.len() <= 4, "{unit}");
        }
        assert_eq!(
            router.classify("Comparing Rust and Go").sub_queries,
            ["Rust", "Go"]
        );
    }

    fn soup() -> impl Strategy<Value = String> {
        let vocabulary = prop::sample::select(vec![
            "hi",
            "thanks",
            "bye",
            "ok",
            "compare",
            "and",
            "vs",
            "vs.",
            "between",
            "difference",
            "what",
            "is",
            "how",
            "do",
            "they",
            "it",
            "why",
            "then,",
            "1)",
            "2)",
            "(a)",
            "(b)",
            "?",
            "X?",
            "Y.",
            "Rust",
            "go",
            "for",
            "of",
            "the",
            "2",
            "+",
            "*",
            "(",
            ")",
            "\n- ",
            ",",
            ";",
            "e.g.",
            "🎉",
            "東京",
            "and then",
            "evaluate",
            "v.",
            "to",
            "with",
        ]);
        prop::collection::vec(vocabulary, 0..40).prop_map(|w| w.join(" "))
    }

    fn check(router: &QueryRouter, q: &str) -> Result<(), TestCaseError> {
        let d = router.classify(q);
        prop_assert!(!d.reason.is_empty());
        if d.route == Route::MultiStep {
            let max = router.config().max_sub_queries;
            prop_assert!(d.sub_queries.len() >= 2, "{q:?}: {d:?}");
            prop_assert!(d.sub_queries.len() <= max, "{q:?}: {d:?}");
            for s in &d.sub_queries {
                prop_assert!(!s.trim().is_empty(), "{q:?}: {d:?}");
            }
        } else {
            prop_assert!(d.sub_queries.is_empty(), "{q:?}: {d:?}");
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn classify_never_panics_on_any_text(q in "\\PC{0,300}", max in 0usize..6) {
            let router = QueryRouter::new(RouterConfig { max_sub_queries: max, ..RouterConfig::default() });
            check(&router, &q)?;
        }

        #[test]
        fn classify_invariants_on_rule_words(q in soup(), max in 0usize..6, min_words in 0usize..40) {
            let router = QueryRouter::new(RouterConfig {
                max_sub_queries: max,
                multi_step_min_words: min_words,
                ..RouterConfig::default()
            });
            check(&router, &q)?;
        }
    }
}
