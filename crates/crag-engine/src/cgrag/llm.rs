//! The LLM gap detector: the sections prompt (or its JSON variant) through a [`LanguageModel`],
//! the reply read by `crag-gaps`' tolerant parser.

use std::sync::Arc;

use async_trait::async_trait;
use crag_gaps::{
    answer_and_gaps_json_prompt, answer_and_gaps_prompt, parse_answer_and_gaps, resolve_chunk_ids,
    ContextChunk, Format,
};
use crag_ports::{
    ChatMessage, CompletionRequest, ContextItem, GapDetector, GapReport, LanguageModel, PortResult,
    Role,
};

/// Answers and names gaps with a language model.
#[derive(Debug, Clone)]
pub struct LlmGapDetector {
    model: Arc<dyn LanguageModel>,
    name: String,
    max_tokens: u32,
    json: bool,
}

impl LlmGapDetector {
    /// A detector over `model` writing at most `max_tokens` per call; `json` asks for the JSON
    /// variant of the prompt.
    pub fn new(model: Arc<dyn LanguageModel>, max_tokens: u32, json: bool) -> Self {
        let name = format!("llm:{}", model.model_id());
        Self {
            model,
            name,
            max_tokens: max_tokens.max(1),
            json,
        }
    }
}

/// The token estimate of a model call's text, which the embedder's tokenizer never sees
/// (crag's one estimate, [`crag_refine::estimate_tokens`]).
fn estimate_tokens(text: &str) -> u32 {
    u32::try_from(crag_refine::estimate_tokens(text)).unwrap_or(u32::MAX)
}

#[async_trait]
impl GapDetector for LlmGapDetector {
    fn name(&self) -> &str {
        &self.name
    }

    fn answers(&self) -> bool {
        true
    }

    async fn detect(
        &self,
        question: &str,
        context: &[ContextItem],
        _known_missing: &[String],
    ) -> PortResult<GapReport> {
        let chunks: Vec<ContextChunk<'_>> = context
            .iter()
            .map(|c| ContextChunk::new(&c.id, &c.text))
            .collect();
        let prompt = if self.json {
            answer_and_gaps_json_prompt(question, &chunks)
        } else {
            answer_and_gaps_prompt(question, &chunks)
        };
        let request = CompletionRequest {
            messages: vec![
                ChatMessage {
                    role: Role::System,
                    content: prompt.system.clone(),
                },
                ChatMessage::user(prompt.user.clone()),
            ],
            max_tokens: self.max_tokens,
            temperature: 0.0,
        };
        let reply = self.model.complete(&request).await?;
        let mut parsed = parse_answer_and_gaps(&reply);
        parsed.drop_question_echo(question);
        let ids: Vec<&str> = context.iter().map(|c| c.id.as_str()).collect();
        let tokens = estimate_tokens(&prompt.system)
            .saturating_add(estimate_tokens(&prompt.user))
            .saturating_add(estimate_tokens(&reply));
        Ok(GapReport {
            answer: parsed.answer.filter(|a| !a.trim().is_empty()),
            gaps: parsed.gaps,
            useful_ids: resolve_chunk_ids(&parsed.useful_chunk_ids, &ids),
            parsed: parsed.format != Format::Unparsed,
            warnings: parsed.warnings,
            tokens,
            external: Vec::new(),
        })
    }
}
