//! The key operational metrics of Corrective RAG over a `crag eval` run's Corrective RAG stage: how
//! often queries are corrected and how often that pays, how often the web is searched, the fast and
//! the corrected path's latency, and the evaluation cache's hit rate.

use std::cmp::Ordering;

use crag_engine::QueryOutcome;
use serde::Serialize;

use crate::metrics::percentile;

/// The key metrics of one run's Corrective RAG stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SeedMetrics {
    /// Queries through Corrective RAG.
    pub queries: usize,
    /// Share of them corrected (a correction other than `keep`: filter, expand, rewrite, web
    /// search, refine).
    pub correction_rate: f64,
    /// Share of the corrected queries whose nDCG@10 rose over plain hybrid retrieval.
    pub correction_success_rate: Option<f64>,
    /// Share of the queries that used web search.
    pub web_search_rate: f64,
    /// Median engine time (ms) of the queries kept as retrieved (the fast path).
    pub fast_path_p50_ms: Option<f64>,
    /// Median engine time (ms) of the corrected queries.
    pub corrected_path_p50_ms: Option<f64>,
    /// Evaluations served from the evaluation cache over the whole run (every stage, the
    /// throughput runs and re-judged corrections included).
    pub evaluation_cache_hits: u64,
    /// Evaluations run over the whole run.
    pub evaluation_cache_misses: u64,
    /// `hits / (hits + misses)`.
    pub evaluation_cache_hit_rate: Option<f64>,
}

/// The metrics of `outcomes`, each with how its nDCG@10 compares with plain hybrid
/// retrieval's, and the evaluation cache's `(hits, misses)`.
pub fn seed_metrics<'a>(
    outcomes: impl IntoIterator<Item = (&'a QueryOutcome, Option<Ordering>)>,
    (hits, misses): (u64, u64),
) -> SeedMetrics {
    let (mut queries, mut corrected, mut raised, mut web) = (0, 0, 0, 0);
    let (mut fast, mut slow) = (Vec::new(), Vec::new());
    for (o, against_hybrid) in outcomes {
        queries += 1;
        web += usize::from(o.web_search_used);
        let ms = o.timings.total.as_secs_f64() * 1000.0;
        if o.correction_strategy() == "none" {
            fast.push(ms);
        } else {
            corrected += 1;
            raised += usize::from(against_hybrid == Some(Ordering::Greater));
            slow.push(ms);
        }
    }
    let share = |n: usize, of: usize| (of > 0).then(|| n as f64 / of as f64);
    let judged = hits + misses;
    SeedMetrics {
        queries,
        correction_rate: share(corrected, queries).unwrap_or(0.0),
        correction_success_rate: share(raised, corrected),
        web_search_rate: share(web, queries).unwrap_or(0.0),
        fast_path_p50_ms: percentile(&fast, 0.5),
        corrected_path_p50_ms: percentile(&slow, 0.5),
        evaluation_cache_hits: hits,
        evaluation_cache_misses: misses,
        evaluation_cache_hit_rate: (judged > 0).then(|| hits as f64 / judged as f64),
    }
}

/// The metrics as one line for people.
pub fn describe(m: &SeedMetrics) -> String {
    let pct =
        |x: Option<f64>| x.map_or_else(|| "n/a".to_owned(), |x| format!("{:.1} %", 100.0 * x));
    let ms = |x: Option<f64>| x.map_or_else(|| "n/a".to_owned(), |x| format!("{x:.1} ms"));
    format!(
        "seed metrics over {} queries: corrected {} (of which raised nDCG@10 {}), web search {}, \
         p50 fast path {} / corrected path {}, evaluation cache {} hits of {} ({})",
        m.queries,
        pct(Some(m.correction_rate)),
        pct(m.correction_success_rate),
        pct(Some(m.web_search_rate)),
        ms(m.fast_path_p50_ms),
        ms(m.corrected_path_p50_ms),
        m.evaluation_cache_hits,
        m.evaluation_cache_hits + m.evaluation_cache_misses,
        pct(m.evaluation_cache_hit_rate),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crag_core::{Correction, CorrectionKind, Query};
    use crag_engine::QueryTimings;
    use crag_routing::{Route, RoutingDecision};

    use super::*;

    fn outcome(corrected: Option<CorrectionKind>, web: bool, ms: u64) -> QueryOutcome {
        QueryOutcome {
            query: Query::new("q").unwrap(),
            route: RoutingDecision::new(Route::Single, "standard query"),
            artifacts: Vec::new(),
            evaluation: None,
            evaluator: None,
            corrections: corrected
                .map(|k| Correction::new(k, "why"))
                .into_iter()
                .collect(),
            web_search_used: web,
            original_count: 0,
            rerank: None,
            tokens_used: 0,
            token_budget: 8000,
            timings: QueryTimings {
                total: Duration::from_millis(ms),
                ..QueryTimings::default()
            },
            warnings: Vec::new(),
        }
    }

    #[test]
    fn rates_and_paths_count_what_they_say() {
        let kept = outcome(Some(CorrectionKind::Keep), false, 10);
        let plain = outcome(None, false, 30);
        let expanded = outcome(Some(CorrectionKind::Expand), false, 100);
        let searched = outcome(Some(CorrectionKind::WebSearch), true, 300);
        let m = seed_metrics(
            [
                (&kept, Some(Ordering::Equal)),
                (&plain, None),
                (&expanded, Some(Ordering::Greater)),
                (&searched, Some(Ordering::Less)),
            ],
            (3, 9),
        );
        assert_eq!(m.queries, 4);
        assert_eq!(m.correction_rate, 0.5);
        assert_eq!(m.correction_success_rate, Some(0.5));
        assert_eq!(m.web_search_rate, 0.25);
        assert_eq!(m.fast_path_p50_ms, Some(10.0));
        assert_eq!(m.corrected_path_p50_ms, Some(100.0));
        assert_eq!(m.evaluation_cache_hit_rate, Some(0.25));
        assert!(
            describe(&m).contains("corrected 50.0 %"),
            "{}",
            describe(&m)
        );
    }

    #[test]
    fn nothing_run_gives_no_rates() {
        let m = seed_metrics([], (0, 0));
        assert_eq!(m.queries, 0);
        assert_eq!(m.correction_success_rate, None);
        assert_eq!(m.fast_path_p50_ms, None);
        assert_eq!(m.evaluation_cache_hit_rate, None);
    }
}
