//! Expand (ambiguous verdict): expand the query, retrieve again, fuse the new list with the
//! current one (which weighs at least as much), and keep the fused list only if the
//! evaluator scores it higher. Expansion is pseudo-relevance feedback by default (RM3 terms
//! for the keyword leg, Rocchio for the vector leg, from the current list's top documents),
//! or synonyms.

use std::collections::BTreeSet;
use std::time::Instant;

use async_trait::async_trait;
use crag_core::{Correction, CorrectionKind, Query, Verdict};
use crag_expansion::{rm3, rocchio};

use super::{boxed, keep_better, Action, Attempt, CorrectiveAction, JudgedList};
use crate::crag::artifact::{Artifact, ArtifactOrigin};
use crate::crag::config::ExpansionStrategy;
use crate::crag::run::QueryState;
use crate::crag::timings::Stage;
use crate::engine::Retrieval;
use crate::error::Result;

pub(super) const ACTION: Action = Action {
    name: "expand",
    when: "ambiguous verdict, `crag.expansion_enabled`",
    does: "expands the query (`crag.expansion`: feedback from the top documents, or \
           synonyms), retrieves again, fuses with the current list and keeps the fusion (only \
           if it judges better under `crag.reevaluate_corrections`) (`expand`)",
    plan: |verdict, config, _| {
        boxed(
            (verdict == Verdict::Ambiguous && config.expansion_enabled).then_some(Expand {
                strategy: config.expansion,
            }),
        )
    },
};

/// Expands with one strategy (`crag.expansion`, or the next one a retry tries).
pub(crate) struct Expand {
    pub(crate) strategy: ExpansionStrategy,
}

/// A further retrieval and how it was made.
struct Expanded {
    retrieval: Retrieval,
    how: String,
    queries: Vec<String>,
}

#[async_trait]
impl CorrectiveAction for Expand {
    fn attempt(&self) -> Option<Attempt> {
        Some(match self.strategy {
            ExpansionStrategy::Prf => Attempt::Feedback,
            ExpansionStrategy::Synonyms => Attempt::Synonyms,
        })
    }

    async fn apply(&self, run: &mut QueryState<'_>, work: JudgedList) -> Result<JudgedList> {
        let t = Instant::now();
        let expanded = match self.strategy {
            ExpansionStrategy::Synonyms => synonyms(run).await?,
            ExpansionStrategy::Prf => feedback(run, &work.artifacts).await?,
        };
        let Some(expanded) = expanded else {
            run.timings.add(Stage::Expand, t.elapsed());
            return Ok(work);
        };
        let new: Vec<Artifact> = expanded
            .retrieval
            .hits
            .into_iter()
            .map(Artifact::from_hit)
            .collect();
        let weight = run.runtime.config().further_retrieval_weight;
        let (fused, added) = run.fuse_with(&work.artifacts, new, weight);
        run.timings.add(Stage::Expand, t.elapsed());
        if added == 0 && same_order(&fused, &work.artifacts) {
            run.corrections.push(
                Correction::new(
                    CorrectionKind::Keep,
                    format!("{}: nothing new found; list kept", expanded.how),
                )
                .with_queries(expanded.queries),
            );
            return Ok(work);
        }
        let before = work.evaluation.score;
        let (work, won, after) = keep_better(run, work, fused).await?;
        let scores = match after {
            Some(after) => format!(" (judged {after:.3} against {before:.3})"),
            None => String::new(),
        };
        let correction = if won {
            Correction::new(
                CorrectionKind::Expand,
                format!(
                    "{}, fused by rank with the current list: {added} new documents{scores}",
                    expanded.how
                ),
            )
        } else {
            Correction::new(
                CorrectionKind::Keep,
                format!(
                    "{}: the fused list did not judge better{scores}; current list kept",
                    expanded.how
                ),
            )
        };
        run.corrections
            .push(correction.with_queries(expanded.queries));
        Ok(work)
    }
}

fn same_order(a: &[Artifact], b: &[Artifact]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.chunk.id == y.chunk.id)
}

/// Synonym expansion: the query with synonyms of its terms from the synonym table.
async fn synonyms(run: &mut QueryState<'_>) -> Result<Option<Expanded>> {
    let Some(text) = run.runtime.expander.expand(run.request.query.as_str()) else {
        tracing::debug!("no synonyms for the query; expansion skipped");
        return Ok(None);
    };
    let query = match Query::new(&text) {
        Ok(q) => q,
        Err(e) => {
            run.warnings.push(format!("expanded query rejected: {e}"));
            return Ok(None);
        }
    };
    let retrieval = run.retrieve_again(&query).await?;
    Ok(Some(Expanded {
        retrieval,
        how: "expanded the query with synonyms".into(),
        queries: vec![text],
    }))
}

/// Pseudo-relevance feedback from the top index documents of `current`.
async fn feedback(run: &mut QueryState<'_>, current: &[Artifact]) -> Result<Option<Expanded>> {
    let config = run.runtime.config().prf;
    let docs: Vec<&Artifact> = current
        .iter()
        .filter(|a| a.origin == ArtifactOrigin::Index)
        .take(config.feedback_docs)
        .collect();
    let Some(query_vector) = run.query_vector.clone() else {
        run.warnings
            .push("no query embedding; pseudo-relevance feedback skipped".into());
        return Ok(None);
    };
    if docs.is_empty() {
        return Ok(None);
    }
    let keywords = run.engine.keyword_index();
    // The query's distinct index terms: BM25 searches each term once.
    let query_terms: Vec<String> = keywords
        .analyze(run.request.query.as_str())
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let doc_terms: Vec<Vec<String>> = docs
        .iter()
        .map(|a| keywords.analyze(&format!("{}\n{}", a.chunk.title, a.chunk.text)))
        .collect();
    // Feedback documents weigh the same: fused scores are relative to each query's
    // candidates (the best is always 1), not a likelihood RM3 could weigh by.
    let terms = rm3(&query_terms, &doc_terms, &[], &config);
    let ids: Vec<_> = docs.iter().map(|a| a.chunk.id.clone()).collect();
    let stored = run.engine.stored_vectors(&ids).await?;
    let feedback_vectors: Vec<Vec<f32>> = stored.into_iter().map(|(_, v)| v).collect();
    let vector = rocchio(&query_vector, &feedback_vectors, config.rocchio_weight);
    if terms.is_empty() && feedback_vectors.is_empty() {
        return Ok(None);
    }
    let retrieval = run
        .engine
        .retrieve_expanded(
            &terms,
            &vector,
            run.head_k,
            Some(run.runtime.config().further_leg_depth),
            &run.request.filter,
            run.request.fusion,
        )
        .await?;
    run.warnings.extend(retrieval.warnings.iter().cloned());
    let shown: Vec<String> = terms
        .iter()
        .take(config.feedback_terms + query_terms.len())
        .map(|t| format!("{}^{:.3}", t.term, t.weight))
        .collect();
    Ok(Some(Expanded {
        retrieval,
        how: format!(
            "pseudo-relevance feedback from {} documents ({} terms, {} vectors)",
            docs.len(),
            terms.len(),
            feedback_vectors.len()
        ),
        queries: vec![shown.join(" ")],
    }))
}
