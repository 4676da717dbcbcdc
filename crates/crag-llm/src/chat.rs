//! [`OpenAiChat`]: the `LanguageModel` port over an OpenAI-compatible chat completions API.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use crag_ports::{
    ChatMessage, CompletionRequest, ErrorKind, LanguageModel, PortError, PortResult, Role,
};
use reqwest::header::HeaderValue;
use reqwest::Client;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::http::{bearer_header, build_client, check_http_url, post_json, Redacted};
use crate::retry::{retry, Failure, RetryPolicy};

/// What the errors of this adapter call the remote end.
const WHAT: &str = "chat completion";

/// Configuration of [`OpenAiChat`].
#[derive(Clone)]
pub struct OpenAiChatConfig {
    /// Base URL of the API, e.g. `http://localhost:8000/v1`; `chat/completions` is appended.
    pub base_url: Url,
    /// Model name sent with each request, e.g. `Qwen/Qwen2.5-7B-Instruct`.
    pub model: String,
    /// Bearer token, if the server wants one. Never logged.
    pub api_key: Option<String>,
    /// Time allowed for one attempt, from connecting to the last byte of the answer.
    pub timeout: Duration,
    /// Retries after the first attempt on 408, 429, 5xx, connection errors and timeouts.
    pub max_retries: u32,
    /// Delay before the first retry; it doubles with each further retry.
    pub initial_backoff: Duration,
    /// Longest delay between two attempts, a server's `Retry-After` included.
    pub max_backoff: Duration,
}

impl OpenAiChatConfig {
    /// Returns a configuration for `model` at `base_url` with the defaults: no API key, 30 s
    /// timeout, 3 retries, backoff from 500 ms doubling up to 8 s.
    pub fn new(base_url: Url, model: impl Into<String>) -> Self {
        Self {
            base_url,
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(30),
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        }
    }

    /// Sets the API key from the environment variable `var` when it is set and not blank
    /// (surrounding whitespace is trimmed); otherwise leaves the key as it was.
    #[must_use]
    pub fn api_key_from_env(self, var: &str) -> Self {
        self.api_key_from(std::env::var(var).ok())
    }

    fn api_key_from(mut self, value: Option<String>) -> Self {
        if let Some(key) = value.map(|v| v.trim().to_owned()) {
            if !key.is_empty() {
                self.api_key = Some(key);
            }
        }
        self
    }

    fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.max_retries,
            initial_backoff: self.initial_backoff,
            max_backoff: self.max_backoff,
        }
    }
}

impl fmt::Debug for OpenAiChatConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChatConfig")
            .field("base_url", &format_args!("{}", Redacted(&self.base_url)))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .finish()
    }
}

/// A chat model behind an OpenAI-compatible `POST {base_url}/chat/completions` endpoint
/// (OpenAI, vLLM, Ollama, llama.cpp server, TGI, LM Studio).
pub struct OpenAiChat {
    config: OpenAiChatConfig,
    endpoint: Url,
    auth: Option<HeaderValue>,
    client: Client,
}

impl OpenAiChat {
    /// Validates `config` and builds the HTTP client.
    ///
    /// Fails with [`ErrorKind::InvalidInput`] for a base URL that is not http(s), an empty model
    /// name, a zero timeout or an API key that cannot be sent in a header.
    pub fn new(config: OpenAiChatConfig) -> Result<Self, PortError> {
        check_http_url(&config.base_url, "chat base url")?;
        if config.model.trim().is_empty() {
            return Err(PortError::invalid_input(
                "chat model name must not be empty",
            ));
        }
        let endpoint = chat_endpoint(&config.base_url)?;
        let auth = bearer_header(config.api_key.as_deref())?;
        let client = build_client(config.timeout)?;
        Ok(Self {
            config,
            endpoint,
            auth,
            client,
        })
    }

    /// Returns the URL requests are sent to.
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    async fn attempt(&self, body: &ChatBody<'_>) -> Result<String, Failure> {
        let bytes = post_json(&self.client, &self.endpoint, self.auth.as_ref(), body, WHAT).await?;
        parse_reply(&bytes)
    }
}

impl fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChat")
            .field("endpoint", &format_args!("{}", Redacted(&self.endpoint)))
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl LanguageModel for OpenAiChat {
    fn model_id(&self) -> &str {
        &self.config.model
    }

    async fn complete(&self, request: &CompletionRequest) -> PortResult<String> {
        validate(request)?;
        let body = ChatBody {
            model: &self.config.model,
            messages: request.messages.iter().map(WireMessage::from).collect(),
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            stream: false,
        };
        tracing::debug!(
            model = %self.config.model,
            messages = body.messages.len(),
            max_tokens = body.max_tokens,
            "chat completion request"
        );
        retry(&self.config.retry_policy(), WHAT, || self.attempt(&body)).await
    }
}

/// Appends `chat/completions` to the path of `base`, with or without its trailing slash, keeping
/// any query string.
fn chat_endpoint(base: &Url) -> PortResult<Url> {
    let mut endpoint = base.clone();
    endpoint.set_fragment(None);
    endpoint
        .path_segments_mut()
        .map_err(|()| PortError::invalid_input("chat base url cannot take a path"))?
        .pop_if_empty()
        .extend(["chat", "completions"]);
    Ok(endpoint)
}

fn validate(request: &CompletionRequest) -> PortResult<()> {
    request.validate()
}

/// Returns `choices[0].message.content`, failing with `Internal` when it is missing or blank.
pub(crate) fn parse_reply(body: &[u8]) -> Result<String, Failure> {
    let reply: ChatReply = serde_json::from_slice(body).map_err(|e| {
        Failure::fatal(
            ErrorKind::Internal,
            format!("malformed {WHAT} response: {e}"),
        )
    })?;
    let content = reply
        .choices
        .into_iter()
        .next()
        .and_then(|c| c.message)
        .and_then(|m| m.content);
    match content {
        Some(text) if !text.trim().is_empty() => Ok(text),
        Some(_) => Err(Failure::fatal(
            ErrorKind::Internal,
            format!("{WHAT} response has empty content"),
        )),
        None => Err(Failure::fatal(
            ErrorKind::Internal,
            format!("{WHAT} response has no choices[0].message.content"),
        )),
    }
}

#[derive(Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    max_tokens: u32,
    temperature: f32,
    stream: bool,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: &'a str,
}

impl<'a> From<&'a ChatMessage> for WireMessage<'a> {
    fn from(message: &'a ChatMessage) -> Self {
        Self {
            role: match message.role {
                Role::System => "system",
                Role::User => "user",
                Role::Assistant => "assistant",
            },
            content: &message.content,
        }
    }
}

#[derive(Deserialize)]
struct ChatReply {
    #[serde(default)]
    choices: Vec<ChatChoice>,
}

#[derive(Deserialize)]
struct ChatChoice {
    #[serde(default)]
    message: Option<ChatReplyMessage>,
}

#[derive(Deserialize)]
struct ChatReplyMessage {
    #[serde(default)]
    content: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    #[test]
    fn endpoint_joins_with_or_without_slash() {
        for base in [
            "http://localhost:8000/v1",
            "http://localhost:8000/v1/",
            "http://localhost:8000/v1#frag",
        ] {
            assert_eq!(
                chat_endpoint(&url(base)).expect("join").as_str(),
                "http://localhost:8000/v1/chat/completions",
                "{base}"
            );
        }
        assert_eq!(
            chat_endpoint(&url("http://localhost:11434"))
                .expect("join")
                .as_str(),
            "http://localhost:11434/chat/completions"
        );
        assert_eq!(
            chat_endpoint(&url("https://host/openai/deployments/x?api-version=1"))
                .expect("join")
                .as_str(),
            "https://host/openai/deployments/x/chat/completions?api-version=1"
        );
    }

    #[test]
    fn config_defaults() {
        let c = OpenAiChatConfig::new(url("http://localhost:8000/v1"), "m");
        assert_eq!(c.timeout, Duration::from_secs(30));
        assert_eq!(c.max_retries, 3);
        assert_eq!(c.initial_backoff, Duration::from_millis(500));
        assert_eq!(c.max_backoff, Duration::from_secs(8));
        assert!(c.api_key.is_none());
    }

    #[test]
    fn api_key_comes_from_non_blank_values_only() {
        let c = OpenAiChatConfig::new(url("http://h/v1"), "m");
        assert_eq!(c.clone().api_key_from(None).api_key, None);
        assert_eq!(c.clone().api_key_from(Some("  ".into())).api_key, None);
        assert_eq!(
            c.clone()
                .api_key_from(Some(" sk-1\n".into()))
                .api_key
                .as_deref(),
            Some("sk-1")
        );
        let kept = OpenAiChatConfig {
            api_key: Some("explicit".into()),
            ..c
        };
        assert_eq!(
            kept.api_key_from(Some(String::new())).api_key.as_deref(),
            Some("explicit")
        );
    }

    #[test]
    fn debug_redacts_secrets() {
        let mut c = OpenAiChatConfig::new(url("http://user:pw-secret@h/v1"), "m");
        c.api_key = Some("sk-very-secret".into());
        let shown = format!("{c:?}");
        assert!(!shown.contains("sk-very-secret"), "{shown}");
        assert!(!shown.contains("pw-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        let chat = OpenAiChat::new(c).expect("valid");
        let shown = format!("{chat:?}");
        assert!(!shown.contains("sk-very-secret"), "{shown}");
        assert!(!shown.contains("pw-secret"), "{shown}");
    }

    #[test]
    fn new_rejects_bad_config() {
        let base = url("http://localhost:8000/v1");
        let cases = [
            OpenAiChatConfig::new(url("ftp://localhost/v1"), "m"),
            OpenAiChatConfig::new(base.clone(), "  "),
            OpenAiChatConfig {
                timeout: Duration::ZERO,
                ..OpenAiChatConfig::new(base.clone(), "m")
            },
            OpenAiChatConfig {
                api_key: Some("line\nbreak".into()),
                ..OpenAiChatConfig::new(base, "m")
            },
        ];
        for config in cases {
            let err = OpenAiChat::new(config).expect_err("invalid");
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        }
    }

    #[test]
    fn requests_are_validated() {
        let ok = CompletionRequest {
            messages: vec![ChatMessage::user("hi")],
            max_tokens: 10,
            temperature: 0.0,
        };
        assert!(validate(&ok).is_ok());
        let bad = [
            CompletionRequest {
                messages: vec![],
                ..ok.clone()
            },
            CompletionRequest {
                max_tokens: 0,
                ..ok.clone()
            },
            CompletionRequest {
                temperature: f32::NAN,
                ..ok.clone()
            },
            CompletionRequest {
                temperature: -0.1,
                ..ok.clone()
            },
            CompletionRequest {
                temperature: 2.5,
                ..ok
            },
        ];
        for request in bad {
            let err = validate(&request).expect_err("invalid");
            assert_eq!(err.kind(), ErrorKind::InvalidInput);
        }
    }

    #[test]
    fn replies_are_parsed() {
        let ok = br#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}]}"#;
        assert_eq!(parse_reply(ok).expect("ok"), "Hello");
        for bad in [
            &b"not json"[..],
            br#"{"choices":[]}"#,
            br#"{}"#,
            br#"{"choices":[{"message":{"content":null}}]}"#,
            br#"{"choices":[{"message":{"content":"  "}}]}"#,
            br#"{"choices":[{"text":"legacy"}]}"#,
            br#"{"choices":"nope"}"#,
            br#"[1,2]"#,
        ] {
            let f = parse_reply(bad).expect_err("bad reply");
            assert_eq!(f.kind, ErrorKind::Internal);
            assert!(!f.retryable);
        }
    }
}
