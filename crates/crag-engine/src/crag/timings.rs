//! Where a query's time goes: the one list of its timed stages.

use std::time::Duration;

use crate::retrieval::RetrievalTimings;

/// Time spent in each stage of a query.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QueryTimings {
    /// Routing.
    pub route: Duration,
    /// The first retrieval (all legs and sub-queries).
    pub retrieve: Duration,
    /// Stages of the first retrieval.
    pub retrieval: RetrievalTimings,
    /// Cross-encoder reranking (zero when skipped or served from the cache).
    pub rerank: Duration,
    /// Relevance evaluation (all rounds).
    pub evaluate: Duration,
    /// Query expansion and the expanded retrieval.
    pub expand: Duration,
    /// Query rewriting and the retrieval with the rewritten query.
    pub rewrite: Duration,
    /// Web search.
    pub web_search: Duration,
    /// Knowledge refinement.
    pub refine: Duration,
    /// Token counting and packing to the budget.
    pub pack: Duration,
    /// The whole query.
    pub total: Duration,
}

/// A stage of a query whose time is recorded in [`QueryTimings`], in the order a query runs
/// them. Its snake_case name is the timing's name on every transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumIter, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Stage {
    /// Routing.
    Route,
    /// The first retrieval.
    Retrieve,
    /// Reranking: the cross-encoder, or the feedback rerank when none is configured.
    Rerank,
    /// Relevance evaluation.
    Evaluate,
    /// Query expansion and its retrieval.
    Expand,
    /// Query rewriting and its retrieval.
    Rewrite,
    /// Web search.
    WebSearch,
    /// Knowledge refinement.
    Refine,
    /// Token counting and packing.
    Pack,
}

impl Stage {
    /// The stage's name (`web_search`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The name of the whole query's time in [`QueryTimings::named`].
pub const TOTAL: &str = "total";

impl QueryTimings {
    /// Every timing with its name, the one list the transports and the docs follow: the
    /// stages in the order a query runs them, the first retrieval's parts after `retrieve`
    /// ([`RetrievalTimings::named`]), then [`TOTAL`].
    pub fn named(&self) -> Vec<(&'static str, Duration)> {
        let mut out = Vec::new();
        for stage in <Stage as strum::IntoEnumIterator>::iter() {
            out.push((stage.as_str(), self.get(stage)));
            if stage == Stage::Retrieve {
                out.extend(self.retrieval.named());
            }
        }
        out.push((TOTAL, self.total));
        out
    }

    /// Adds `elapsed` to `stage`'s time (stages may run several times: evaluation rounds).
    pub fn add(&mut self, stage: Stage, elapsed: Duration) {
        *self.slot(stage) += elapsed;
    }

    /// The time spent in `stage`.
    pub fn get(&self, stage: Stage) -> Duration {
        let mut copy = *self;
        *copy.slot(stage)
    }

    fn slot(&mut self, stage: Stage) -> &mut Duration {
        match stage {
            Stage::Route => &mut self.route,
            Stage::Retrieve => &mut self.retrieve,
            Stage::Rerank => &mut self.rerank,
            Stage::Evaluate => &mut self.evaluate,
            Stage::Expand => &mut self.expand,
            Stage::Rewrite => &mut self.rewrite,
            Stage::WebSearch => &mut self.web_search,
            Stage::Refine => &mut self.refine,
            Stage::Pack => &mut self.pack,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stage_is_named_once_in_order() {
        let mut t = QueryTimings::default();
        for (i, stage) in <Stage as strum::IntoEnumIterator>::iter().enumerate() {
            t.add(stage, Duration::from_millis(i as u64 + 1));
        }
        t.retrieval.keyword = Duration::from_millis(100);
        t.total = Duration::from_millis(1000);
        let named = t.named();
        let names: Vec<&str> = named.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "route",
                "retrieve",
                "keyword",
                "embed",
                "vector",
                "fusion",
                "rerank",
                "evaluate",
                "expand",
                "rewrite",
                "web_search",
                "refine",
                "pack",
                "total"
            ]
        );
        assert_eq!(named[1].1, Duration::from_millis(2));
        assert_eq!(named[2].1, Duration::from_millis(100));
        assert_eq!(named[10].1, Duration::from_millis(7));
        assert_eq!(named[13].1, Duration::from_millis(1000));
    }
}
