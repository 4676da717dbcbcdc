//! Each query's judgement in a Corrective RAG run, written beside the TREC runs (`crag eval
//! --runs DIR` writes `DIR/judgements.jsonl`): what an evaluator's AUROC is made of, for
//! studying a judge offline (its criteria against the answerable labels the runs give).

use std::path::Path;

use crag_core::{Evaluation, Query};
use crag_engine::QueryOutcome;
use serde::Serialize;

use crate::error::{Context as _, Result};

/// The file name of the judgements in a runs directory.
pub const FILE: &str = "judgements.jsonl";

/// One line of [`FILE`].
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Judgement<'a> {
    /// The collection's query id.
    query: &'a str,
    /// The verdict, or why there is none (`no_retrieval`, `unjudged`).
    decision: &'a str,
    /// The corrections taken (`none` when the retrieval was kept as it was).
    corrections: &'a str,
    /// The evaluator's whole judgement: score, criteria, document scores.
    evaluation: Option<&'a Evaluation>,
}

/// Writes one JSON line per query that has an outcome, in the collection's order.
pub(crate) fn write<'a>(
    dir: &Path,
    queries: &[(String, Query)],
    outcomes: impl Iterator<Item = &'a Option<QueryOutcome>>,
) -> Result<()> {
    let judgements = queries.iter().zip(outcomes).filter_map(|((id, _), o)| {
        o.as_ref().map(|o| Judgement {
            query: id,
            decision: o.decision(),
            corrections: o.correction_strategy(),
            evaluation: o.evaluation.as_ref(),
        })
    });
    let text = lines(judgements)?;
    let path = dir.join(FILE);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn lines<'a>(judgements: impl Iterator<Item = Judgement<'a>>) -> Result<String> {
    let mut text = String::new();
    for j in judgements {
        text.push_str(&serde_json::to_string(&j).context("cannot encode a judgement")?);
        text.push('\n');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crag_core::{CriterionScore, Verdict};

    #[test]
    fn each_judgement_is_one_json_line_with_its_criteria() {
        let evaluation = Evaluation {
            verdict: Verdict::Ambiguous,
            score: 0.6,
            document_scores: vec![Some(0.5), None],
            document_reasons: Vec::new(),
            criteria: vec![CriterionScore {
                name: "leg_agreement".into(),
                score: 0.25,
                weight: 1.0,
            }],
            reasoning: "r".into(),
            issues: Vec::new(),
        };
        let text = lines(
            [
                Judgement {
                    query: "q1",
                    decision: "ambiguous",
                    corrections: "filter",
                    evaluation: Some(&evaluation),
                },
                Judgement {
                    query: "q2",
                    decision: "no_retrieval",
                    corrections: "none",
                    evaluation: None,
                },
            ]
            .into_iter(),
        )
        .unwrap();
        let rows: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["query"], "q1");
        assert_eq!(rows[0]["corrections"], "filter");
        assert_eq!(
            rows[0]["evaluation"]["criteria"][0]["name"],
            "leg_agreement"
        );
        assert_eq!(rows[0]["evaluation"]["verdict"], "ambiguous");
        assert!(rows[1]["evaluation"].is_null());
        assert_eq!(rows[1]["decision"], "no_retrieval");
    }
}
