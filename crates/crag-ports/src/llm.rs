use std::fmt::Debug;

use async_trait::async_trait;

use crate::{PortError, PortResult};

/// Author of a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Instructions.
    System,
    /// The user's turn.
    User,
    /// The model's turn.
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: String,
}

impl ChatMessage {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: content.into(),
        }
    }
}

/// A chat completion request.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    /// The conversation so far.
    pub messages: Vec<ChatMessage>,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Sampling temperature (0 for deterministic judgements).
    pub temperature: f32,
}

/// Highest sampling temperature a request may ask for (OpenAI's bound).
pub const MAX_TEMPERATURE: f32 = 2.0;

impl CompletionRequest {
    /// Checks the request every language model refuses as invalid input: no messages, a zero
    /// token budget, a temperature outside `0..=MAX_TEMPERATURE` or not finite.
    pub fn validate(&self) -> PortResult<()> {
        if self.messages.is_empty() {
            return Err(PortError::invalid_input(
                "completion request has no messages",
            ));
        }
        if self.max_tokens == 0 {
            return Err(PortError::invalid_input(
                "completion request max_tokens must be at least 1",
            ));
        }
        let t = self.temperature;
        if !(t.is_finite() && (0.0..=MAX_TEMPERATURE).contains(&t)) {
            return Err(PortError::invalid_input(format!(
                "completion request temperature must be between 0 and {MAX_TEMPERATURE}, got {t}"
            )));
        }
        Ok(())
    }
}

/// A chat language model.
#[async_trait]
pub trait LanguageModel: Debug + Send + Sync + 'static {
    /// Returns the model identifier.
    fn model_id(&self) -> &str;

    /// Returns the assistant's reply text.
    async fn complete(&self, request: &CompletionRequest) -> PortResult<String>;
}
