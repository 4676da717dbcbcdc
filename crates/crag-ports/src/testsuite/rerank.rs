//! The reranker contract.

use super::sample_chunks;

/// Whether a reranker's scores mean anything, which decides if [`reranker_suite`] checks ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RerankerModel {
    /// A real model, or a fake built to rank: a relevant passage must beat an unrelated one.
    Ranks,
    /// A random-weight test model: its scores carry no meaning, so ranking is not checked.
    Random,
}

fn assert_same_score(a: crate::RerankScore, b: crate::RerankScore, tolerance: f32, what: &str) {
    assert!(
        (a.logit - b.logit).abs() <= tolerance
            && (a.probability - b.probability).abs() <= tolerance,
        "{what}: {a:?} vs {b:?} (tolerance {tolerance})"
    );
}

/// Runs the reranker contract; `model` says whether ranking quality is checked too.
pub async fn reranker_suite(reranker: &dyn crate::Reranker, model: RerankerModel) {
    assert!(!reranker.model_id().is_empty(), "model id must be set");
    let query = "how does sourdough bread rise";
    let passages: Vec<String> = sample_chunks().into_iter().map(|c| c.text).collect();

    assert!(
        reranker
            .rerank(query, &[])
            .await
            .expect("no passages")
            .is_empty(),
        "no passages give no scores"
    );
    for blank in ["", "   ", "\n\t"] {
        let err = reranker
            .rerank(blank, &passages)
            .await
            .expect_err("a blank query must be rejected");
        assert_eq!(
            err.kind(),
            crate::ErrorKind::InvalidInput,
            "query {blank:?}"
        );
    }

    let scores = reranker.rerank(query, &passages).await.expect("rerank");
    assert_eq!(scores.len(), passages.len(), "one score per passage");
    for s in &scores {
        assert!(s.logit.is_finite() && s.probability.is_finite(), "{s:?}");
        let sigmoid = 1.0 / (1.0 + (-f64::from(s.logit)).exp());
        assert!(
            (f64::from(s.probability) - sigmoid).abs() < 1e-5,
            "probability must be sigmoid(logit): {s:?}"
        );
    }

    // Deterministic.
    let again = reranker
        .rerank(query, &passages)
        .await
        .expect("rerank again");
    for (a, b) in scores.iter().zip(&again) {
        assert_same_score(*a, *b, 1e-6, "the same input scored twice");
    }

    // In input order, and each passage's score is its own: alone, reversed, in a crowd.
    for (i, passage) in passages.iter().enumerate() {
        let alone = reranker
            .rerank(query, std::slice::from_ref(passage))
            .await
            .expect("rerank one");
        assert_eq!(alone.len(), 1);
        assert_same_score(
            alone[0],
            scores[i],
            1e-4,
            &format!("passage {i} alone vs in a batch"),
        );
    }
    let reversed: Vec<String> = passages.iter().rev().cloned().collect();
    let mut back = reranker
        .rerank(query, &reversed)
        .await
        .expect("rerank reversed");
    back.reverse();
    for (i, (a, b)) in scores.iter().zip(&back).enumerate() {
        assert_same_score(*a, *b, 1e-4, &format!("passage {i} in reversed order"));
    }
    // Longer than any model's input, an empty passage, repeats: more than a usual batch.
    let long = "Ownership and borrowing make Rust memory safe. ".repeat(100);
    let mut crowd = Vec::new();
    for _ in 0..8 {
        crowd.push(long.clone());
        crowd.extend(passages.iter().cloned());
        crowd.push(String::new());
    }
    let crowd_scores = reranker.rerank(query, &crowd).await.expect("rerank crowd");
    assert_eq!(crowd_scores.len(), crowd.len(), "one score per passage");
    for (j, passage) in crowd.iter().enumerate() {
        let score = crowd_scores[j];
        assert!(score.logit.is_finite(), "passage {j}: {score:?}");
        if let Some(i) = passages.iter().position(|p| p == passage) {
            assert_same_score(
                score,
                scores[i],
                1e-4,
                &format!("crowd passage {j} (sample {i})"),
            );
        }
    }
    let unicode = reranker
        .rerank(
            "日本語の検索 Ünïcödé",
            &["Ünïcödé bröt, 東京 — naïve café".to_owned()],
        )
        .await
        .expect("unicode");
    assert!(unicode[0].logit.is_finite());

    if model == RerankerModel::Ranks {
        for (q, relevant, unrelated) in
            [(query, 2, 4), ("what does the borrow checker reject", 1, 3)]
        {
            let pair = [passages[relevant].clone(), passages[unrelated].clone()];
            let s = reranker.rerank(q, &pair).await.expect("rerank pair");
            assert!(
                s[0].logit > s[1].logit && s[0].probability > s[1].probability,
                "for {q:?}, {:?} ({:?}) must beat {:?} ({:?})",
                pair[0],
                s[0],
                pair[1],
                s[1]
            );
        }
    }
}

#[cfg(test)]
mod reranker_tests {
    use super::*;
    use crate::fakes::TermOverlapReranker;

    #[tokio::test]
    async fn term_overlap_reranker_passes_the_suite() {
        let reranker = TermOverlapReranker::default();
        reranker_suite(&reranker, RerankerModel::Ranks).await;
        assert!(reranker.passages_scored() > 0);
    }

    #[test]
    fn probability_is_the_sigmoid_of_the_logit() {
        for (logit, p) in [(0.0, 0.5), (2.0, 0.880_797), (-2.0, 0.119_203)] {
            let s = crate::RerankScore::from_logit(logit);
            assert!((s.probability - p).abs() < 1e-6, "{s:?}");
        }
        assert_eq!(crate::RerankScore::from_logit(-1000.0).probability, 0.0);
        assert_eq!(crate::RerankScore::from_logit(1000.0).probability, 1.0);
        assert!(crate::RerankScore::from_logit(f32::NAN)
            .probability
            .is_nan());
    }
}
