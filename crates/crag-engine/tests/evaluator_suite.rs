//! Every relevance evaluator the engine wraps runs the port's conformance suite: the seed
//! heuristic, the calibrated evaluator (with the example calibration fitted on SciFact
//! train), and the LLM judge over a scripted language model.

use std::sync::Arc;

use crag_engine::{CalibratedRelevance, HeuristicRelevance, LlmRelevance};
use crag_judge::{Calibration, LlmJudgeConfig};
use crag_ports::fakes::ScriptedLanguageModel;
use crag_ports::testsuite::relevance_evaluator_suite;

#[tokio::test]
async fn the_heuristic_passes_the_suite() {
    let evaluator = HeuristicRelevance::new(Default::default()).unwrap();
    relevance_evaluator_suite(&evaluator).await;
}

#[tokio::test]
async fn the_calibrated_evaluator_passes_the_suite() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/calibration-scifact.toml"
    );
    let text = std::fs::read_to_string(path).expect("the example calibration is in the repository");
    let calibration: Calibration = toml::from_str(&text).expect("a valid calibration");
    let evaluator = CalibratedRelevance::new(calibration).unwrap();
    relevance_evaluator_suite(&evaluator).await;
}

#[tokio::test]
async fn the_llm_judge_passes_the_suite() {
    // The judge asks once per non-empty list: the suite asks twice with the same documents.
    let answer = r#"{"scores": [{"document": 1, "score": 9}, {"document": 2, "score": 6}, {"document": 3, "score": 0}], "reasoning": "the first two are on topic"}"#;
    let model = Arc::new(ScriptedLanguageModel::new([
        Ok(answer.to_owned()),
        Ok(answer.to_owned()),
    ]));
    let evaluator = LlmRelevance::new(model, LlmJudgeConfig::default()).unwrap();
    relevance_evaluator_suite(&evaluator).await;
}
