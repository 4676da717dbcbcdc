//! HTTP adapters of crag for language models, reranking and external relevance evaluation.
//!
//! - [`OpenAiChat`] implements the [`LanguageModel`](crag_ports::LanguageModel) port over an
//!   OpenAI-compatible `POST {base_url}/chat/completions` (OpenAI, vLLM, Ollama, llama.cpp
//!   server). `chat/completions` is appended to the base URL's path whether or not it ends with
//!   `/`; its query string is kept. The reply is `choices[0].message.content`.
//! - [`HttpEvaluator`] implements the [`RelevanceEvaluator`](crag_ports::RelevanceEvaluator)
//!   port over an external service answering `POST {"query", "context"}` with
//!   `{"score": 0..1, "verdict"?: "correct|ambiguous|incorrect", "reasoning"?}`. It sends one
//!   request per leading document (per-document scores) and one with their joined text (overall
//!   score and verdict), concurrently. Without a verdict from the service, the verdict comes
//!   from the thresholds: `score >= correct` is correct, `score <= incorrect` is incorrect,
//!   anything between is ambiguous.
//! - [`HttpReranker`] implements the [`Reranker`](crag_ports::Reranker) port over a
//!   text-embeddings-inference `POST /rerank` (`{"query", "texts", "raw_scores", "truncate":
//!   true}` answered with `[{"index", "score"}]`) or, with [`RerankField::Documents`], a
//!   Cohere-compatible one (`{"query", "documents"}` answered with `{"results": [{"index",
//!   "relevance_score"}]}`; vLLM, Infinity, Jina); `"model"` is sent when configured. Scores
//!   are mapped back to input order by `index`. With `scores_are_logits` a score is the logit
//!   and its probability the sigmoid; without, a score is a probability and the logit is
//!   `ln(p / (1 - p))` clamped to ±40. Passages go in sequential requests of at most
//!   `max_batch`; no passages send no request. The model id is the configured model, else the
//!   URL's host.
//!
//! All send `Authorization: Bearer <key>` when a key is configured; the key is never logged
//! and `Debug` shows it as `<redacted>`.
//!
//! # Defaults
//!
//! | | [`OpenAiChatConfig`] | [`HttpEvaluatorConfig`] | [`HttpRerankerConfig`] |
//! |---|---|---|---|
//! | timeout per request | 30 s | 5 s | 5 s |
//! | retries | 3, backoff 500 ms doubling to 8 s | none | none |
//! | documents evaluated | | top 5, at most 800 characters each | all, 64 per request |
//! | thresholds | | correct >= 0.7, incorrect <= 0.3 | |
//! | scores | | probability in [0, 1] | logits (`scores_are_logits: true`), field `texts` |
//!
//! # Error mapping
//!
//! | outcome | [`ErrorKind`](crag_ports::ErrorKind) |
//! |---|---|
//! | invalid config or request (no messages, `max_tokens` 0, temperature outside 0..=2, blank rerank query, `max_batch` 0) | `InvalidInput` |
//! | HTTP 400, 413, 422 (server message from `{"error":{"message":..}}` kept) | `InvalidInput` |
//! | HTTP 401, 403, 404 and other statuses | `Unavailable` |
//! | HTTP 429, 5xx, connection refused or reset | `Unavailable` |
//! | HTTP 408, request timed out | `Timeout` |
//! | malformed JSON, missing or empty content, score NaN or outside [0, 1], unknown verdict, body over 8 MiB | `Internal` |
//! | rerank answer with a missing, repeated or out-of-range index, or a non-finite score (outside [0, 1] for probabilities) | `Internal` |
//!
//! # Retry policy ([`OpenAiChat`] only)
//!
//! Timeouts, connection errors, 408, 429 and 5xx are retried up to `max_retries` times. Retry
//! `n` (from 0) waits `initial_backoff * 2^n`, capped at `max_backoff`, less up to 10% jitter
//! drawn from the clock; a `Retry-After` header in seconds replaces that delay, capped at
//! `max_backoff`. Other statuses and unparseable answers fail at once. The reranker does not
//! retry: a failed batch fails the call and the engine's rerank fail mode decides. The
//! evaluator does not retry either: a failed overall request is an error (never a guessed
//! verdict), a failed per-document request leaves that document's score `None` and is
//! reported in `issues`.

mod chat;
mod evaluator;
mod http;
mod rerank;
mod retry;

#[cfg(test)]
mod prop_tests;

pub use chat::{OpenAiChat, OpenAiChatConfig};
pub use evaluator::{HttpEvaluator, HttpEvaluatorConfig};
pub use rerank::{HttpReranker, HttpRerankerConfig, RerankField};
