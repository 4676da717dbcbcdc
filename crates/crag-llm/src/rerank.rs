//! [`HttpReranker`]: the `Reranker` port over a text-embeddings-inference or Cohere-style
//! `/rerank` endpoint.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use crag_ports::{ErrorKind, PortError, PortResult, RerankScore, Reranker};
use reqwest::header::HeaderValue;
use reqwest::Client;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::http::{bearer_header, build_client, check_http_url, post_json, Redacted};

/// What the errors of this adapter call the remote end.
const WHAT: &str = "rerank service";

/// Largest magnitude of a logit derived from a probability, so 0 and 1 stay finite.
const MAX_DERIVED_LOGIT: f64 = 40.0;

/// Name of the request field carrying the passages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RerankField {
    /// `"texts"`, as text-embeddings-inference wants it.
    #[default]
    Texts,
    /// `"documents"`, as Cohere-compatible servers (vLLM, Infinity, Jina) want it.
    Documents,
}

/// Configuration of [`HttpReranker`].
#[derive(Clone)]
pub struct HttpRerankerConfig {
    /// Endpoint the requests are POSTed to, used as is (e.g. `http://tei:8080/rerank`).
    pub url: Url,
    /// Model name sent as `"model"` and returned by `model_id`; `None` sends none and uses the
    /// URL's host as the model id.
    pub model: Option<String>,
    /// Bearer token, if the service wants one. Never logged.
    pub api_key: Option<String>,
    /// Time allowed for one request, from connecting to the last byte of the answer.
    pub timeout: Duration,
    /// Most passages sent in one request; more are split into several requests, in order.
    pub max_batch: usize,
    /// Whether the service's scores are raw logits (sigmoid applied here) rather than
    /// probabilities in `[0, 1]` (logit derived as `ln(p / (1 - p))`, clamped to ±40). Sent to
    /// text-embeddings-inference as `raw_scores`.
    pub scores_are_logits: bool,
    /// Request field carrying the passages.
    pub field: RerankField,
}

impl HttpRerankerConfig {
    /// Returns a configuration for the service at `url` with the defaults: no model name, no API
    /// key, 5 s timeout, batches of 64, scores taken as logits, passages sent as `"texts"`.
    pub fn new(url: Url) -> Self {
        Self {
            url,
            model: None,
            api_key: None,
            timeout: Duration::from_secs(5),
            max_batch: 64,
            scores_are_logits: true,
            field: RerankField::Texts,
        }
    }
}

impl fmt::Debug for HttpRerankerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRerankerConfig")
            .field("url", &format_args!("{}", Redacted(&self.url)))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_batch", &self.max_batch)
            .field("scores_are_logits", &self.scores_are_logits)
            .field("field", &self.field)
            .finish()
    }
}

/// Scores (query, passage) pairs with a remote cross-encoder answering
/// `POST {"query", "texts"|"documents", ..}` with `[{"index", "score"}]` (text-embeddings-
/// inference) or `{"results": [{"index", "relevance_score"}]}` (Cohere, Jina, vLLM).
///
/// Passages go in batches of at most `max_batch`, one request after the other, without
/// retries: the engine decides what a failed rerank means.
pub struct HttpReranker {
    config: HttpRerankerConfig,
    model_id: String,
    client: Client,
    auth: Option<HeaderValue>,
}

impl HttpReranker {
    /// Validates `config` and builds the HTTP client.
    ///
    /// Fails with [`ErrorKind::InvalidInput`] for a URL that is not http(s), a zero timeout,
    /// `max_batch` of zero, a blank model name, or an API key that cannot be sent in a header.
    pub fn new(config: HttpRerankerConfig) -> Result<Self, PortError> {
        check_http_url(&config.url, "rerank service url")?;
        if config.max_batch == 0 {
            return Err(PortError::invalid_input(
                "reranker max_batch must be at least 1",
            ));
        }
        let model_id = match &config.model {
            Some(model) if model.trim().is_empty() => {
                return Err(PortError::invalid_input(
                    "reranker model name must not be blank",
                ));
            }
            Some(model) => model.clone(),
            None => config.url.host_str().unwrap_or_default().to_owned(),
        };
        let auth = bearer_header(config.api_key.as_deref())?;
        let client = build_client(config.timeout)?;
        Ok(Self {
            config,
            model_id,
            client,
            auth,
        })
    }

    /// Sends one batch and returns its scores in input order.
    async fn rerank_batch(&self, query: &str, passages: &[String]) -> PortResult<Vec<RerankScore>> {
        let (texts, documents, raw_scores, truncate) = match self.config.field {
            RerankField::Texts => (
                Some(passages),
                None,
                Some(self.config.scores_are_logits),
                Some(true),
            ),
            RerankField::Documents => (None, Some(passages), None, None),
        };
        let body = RerankRequest {
            query,
            texts,
            documents,
            raw_scores,
            truncate,
            model: self.config.model.as_deref(),
        };
        let bytes = post_json(
            &self.client,
            &self.config.url,
            self.auth.as_ref(),
            &body,
            WHAT,
        )
        .await
        .map_err(|f| f.into_port_error(1))?;
        parse_scores(&bytes, passages.len(), self.config.scores_are_logits)
    }
}

impl fmt::Debug for HttpReranker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpReranker")
            .field("model_id", &self.model_id)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Reranker for HttpReranker {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    async fn rerank(&self, query: &str, passages: &[String]) -> PortResult<Vec<RerankScore>> {
        if query.trim().is_empty() {
            return Err(PortError::invalid_input("rerank query is empty"));
        }
        let mut scores = Vec::with_capacity(passages.len());
        for batch in passages.chunks(self.config.max_batch) {
            scores.extend(self.rerank_batch(query, batch).await?);
        }
        Ok(scores)
    }
}

#[derive(Serialize)]
struct RerankRequest<'a> {
    query: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    texts: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    documents: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_scores: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    truncate: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
}

/// The two answer shapes.
#[derive(Deserialize)]
#[serde(untagged)]
enum RerankReply {
    /// text-embeddings-inference: `[{"index", "score"}]`.
    Tei(Vec<TeiResult>),
    /// Cohere, Jina, vLLM: `{"results": [{"index", "relevance_score"}]}`.
    Cohere { results: Vec<CohereResult> },
}

#[derive(Deserialize)]
struct TeiResult {
    index: usize,
    score: f64,
}

#[derive(Deserialize)]
struct CohereResult {
    index: usize,
    relevance_score: f64,
}

/// Parses an answer for `count` passages into their scores in input order.
///
/// Every passage must have exactly one finite score: a missing, repeated or out-of-range index
/// is an error, never a guess.
pub(crate) fn parse_scores(
    body: &[u8],
    count: usize,
    scores_are_logits: bool,
) -> PortResult<Vec<RerankScore>> {
    let reply: RerankReply = serde_json::from_slice(body).map_err(|e| {
        PortError::internal(
            format!(
                "malformed {WHAT} response: expected [{{\"index\", \"score\"}}] or \
                 {{\"results\": [{{\"index\", \"relevance_score\"}}]}}"
            ),
            e,
        )
    })?;
    let pairs: Vec<(usize, f64)> = match reply {
        RerankReply::Tei(results) => results.into_iter().map(|r| (r.index, r.score)).collect(),
        RerankReply::Cohere { results } => results
            .into_iter()
            .map(|r| (r.index, r.relevance_score))
            .collect(),
    };
    let mut slots: Vec<Option<RerankScore>> = vec![None; count];
    for (index, score) in pairs {
        let slot = slots.get_mut(index).ok_or_else(|| {
            internal(format!(
                "{WHAT} returned index {index} for {count} passages"
            ))
        })?;
        if slot.is_some() {
            return Err(internal(format!("{WHAT} returned index {index} twice")));
        }
        *slot = Some(to_score(score, scores_are_logits).ok_or_else(|| {
            internal(format!(
                "{WHAT} returned invalid score {score} for index {index}"
            ))
        })?);
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(index, slot)| {
            slot.ok_or_else(|| internal(format!("{WHAT} returned no score for index {index}")))
        })
        .collect()
}

/// Turns a wire score into a [`RerankScore`]; `None` if it is not finite (as `f32`) or, for a
/// probability, outside `[0, 1]`.
fn to_score(score: f64, scores_are_logits: bool) -> Option<RerankScore> {
    if scores_are_logits {
        // Narrowing may overflow to infinity, which is rejected.
        let logit = score as f32;
        return logit.is_finite().then(|| RerankScore::from_logit(logit));
    }
    if !(score.is_finite() && (0.0..=1.0).contains(&score)) {
        return None;
    }
    let logit = (score / (1.0 - score))
        .ln()
        .clamp(-MAX_DERIVED_LOGIT, MAX_DERIVED_LOGIT);
    // Clamped to ±40 above: the narrowing only rounds to f32 precision.
    Some(RerankScore::from_logit(logit as f32))
}

fn internal(message: String) -> PortError {
    PortError::new(ErrorKind::Internal, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> HttpRerankerConfig {
        HttpRerankerConfig::new(Url::parse("http://reranker.local:8080/rerank").expect("url"))
    }

    #[test]
    fn defaults() {
        let c = config();
        assert_eq!(c.timeout, Duration::from_secs(5));
        assert_eq!(c.max_batch, 64);
        assert!(c.scores_are_logits);
        assert_eq!(c.field, RerankField::Texts);
        assert!(c.model.is_none() && c.api_key.is_none());
    }

    #[test]
    fn model_id_is_the_model_or_the_host() {
        let r = HttpReranker::new(config()).expect("reranker");
        assert_eq!(r.model_id(), "reranker.local");
        let r = HttpReranker::new(HttpRerankerConfig {
            model: Some("bge-reranker-base".into()),
            ..config()
        })
        .expect("reranker");
        assert_eq!(r.model_id(), "bge-reranker-base");
    }

    #[test]
    fn new_rejects_bad_config() {
        let cases = [
            HttpRerankerConfig {
                url: Url::parse("file:///tmp/rerank").expect("url"),
                ..config()
            },
            HttpRerankerConfig {
                timeout: Duration::ZERO,
                ..config()
            },
            HttpRerankerConfig {
                max_batch: 0,
                ..config()
            },
            HttpRerankerConfig {
                model: Some("  ".into()),
                ..config()
            },
            HttpRerankerConfig {
                api_key: Some("a\nb".into()),
                ..config()
            },
        ];
        for c in cases {
            let err = HttpReranker::new(c).expect_err("invalid");
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        }
    }

    #[test]
    fn debug_redacts_the_key() {
        let r = HttpReranker::new(HttpRerankerConfig {
            api_key: Some("sk-secret".into()),
            url: Url::parse("http://u:pw-secret@host/rerank").expect("url"),
            ..config()
        })
        .expect("reranker");
        let shown = format!("{r:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(!shown.contains("pw-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn both_shapes_are_mapped_to_input_order() {
        let tei = br#"[{"index":2,"score":3.0},{"index":0,"score":-1.5},{"index":1,"score":0.0}]"#;
        let s = parse_scores(tei, 3, true).expect("tei");
        let logits: Vec<f32> = s.iter().map(|s| s.logit).collect();
        assert_eq!(logits, [-1.5, 0.0, 3.0]);
        let cohere = br#"{"id":"x","results":[{"index":1,"relevance_score":0.5,"document":{"text":"b"}},{"index":0,"relevance_score":0.8807970779778823}],"meta":{}}"#;
        let s = parse_scores(cohere, 2, false).expect("cohere");
        assert!((s[0].logit - 2.0).abs() < 1e-4, "{s:?}");
        assert!((s[0].probability - 0.880_797).abs() < 1e-6, "{s:?}");
        assert!(s[1].logit.abs() < 1e-6 && (s[1].probability - 0.5).abs() < 1e-6);
        assert!(parse_scores(b"[]", 0, true).expect("empty").is_empty());
    }

    #[test]
    fn probabilities_at_the_ends_stay_finite() {
        for (p, sign) in [(0.0, -1.0), (1.0, 1.0)] {
            let s = to_score(p, false).expect("score");
            assert_eq!(s.logit, sign * 40.0);
            assert!((s.probability - p as f32).abs() < 1e-6, "{s:?}");
        }
        assert!(to_score(1.01, false).is_none());
        assert!(to_score(-0.1, false).is_none());
        assert!(to_score(1e300, true).is_none());
        assert!(to_score(f64::NAN, true).is_none());
        // A logit may be any finite number when scores are logits.
        assert_eq!(to_score(7.5, true).map(|s| s.logit), Some(7.5));
    }

    #[test]
    fn bad_answers_are_internal_errors() {
        let cases: [(&[u8], usize); 9] = [
            (br#"[{"index":0,"score":1.0}]"#, 2),
            (br#"[{"index":0,"score":1.0},{"index":0,"score":2.0}]"#, 2),
            (br#"[{"index":0,"score":1.0},{"index":2,"score":2.0}]"#, 2),
            (br#"[{"index":-1,"score":1.0}]"#, 1),
            (br#"[{"index":0,"score":"high"}]"#, 1),
            (br#"[{"index":0,"score":1e300}]"#, 1),
            (br#"{"results":[{"index":0,"score":1.0}]}"#, 1),
            (br#"{"error":"nope"}"#, 1),
            (b"not json", 1),
        ];
        for (body, count) in cases {
            let err = parse_scores(body, count, true).expect_err("invalid");
            assert_eq!(
                err.kind(),
                ErrorKind::Internal,
                "{}: {err}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
