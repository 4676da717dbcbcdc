//! [`HttpEvaluator`]: the `RelevanceEvaluator` port over an external evaluation service.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use crag_core::{clip_reason, EvalDocument, Evaluation, Query, Verdict};
use crag_ports::{ErrorKind, PortError, PortResult, RelevanceEvaluator};
use reqwest::header::HeaderValue;
use reqwest::Client;
use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;
use url::Url;

use crate::http::{
    bearer_header, build_client, check_http_url, post_json, truncate_chars, Redacted,
};

/// What the errors of this adapter call the remote end.
const WHAT: &str = "evaluation service";

/// Configuration of [`HttpEvaluator`].
#[derive(Clone)]
pub struct HttpEvaluatorConfig {
    /// Endpoint the requests are POSTed to, used as is.
    pub url: Url,
    /// Time allowed for one request, from connecting to the last byte of the answer.
    pub timeout: Duration,
    /// Bearer token, if the service wants one. Never logged.
    pub api_key: Option<String>,
    /// Number of leading documents evaluated; later ones get no score.
    pub top_n: usize,
    /// Characters of each document sent, cut on a char boundary.
    pub max_chars_per_document: usize,
    /// Scores at or above this give [`Verdict::Correct`] when the service sends no verdict.
    pub correct_threshold: f32,
    /// Scores at or below this give [`Verdict::Incorrect`] when the service sends no verdict.
    pub incorrect_threshold: f32,
}

impl HttpEvaluatorConfig {
    /// Returns a configuration for the service at `url` with the defaults: 5 s timeout, no API
    /// key, top 5 documents of at most 800 characters each, thresholds 0.7 and 0.3.
    pub fn new(url: Url) -> Self {
        Self {
            url,
            timeout: Duration::from_secs(5),
            api_key: None,
            top_n: 5,
            max_chars_per_document: 800,
            correct_threshold: 0.7,
            incorrect_threshold: 0.3,
        }
    }

    /// Derives a verdict from `score` with the thresholds.
    fn verdict_for(&self, score: f32) -> Verdict {
        if score >= self.correct_threshold {
            Verdict::Correct
        } else if score <= self.incorrect_threshold {
            Verdict::Incorrect
        } else {
            Verdict::Ambiguous
        }
    }
}

impl fmt::Debug for HttpEvaluatorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEvaluatorConfig")
            .field("url", &format_args!("{}", Redacted(&self.url)))
            .field("timeout", &self.timeout)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("top_n", &self.top_n)
            .field("max_chars_per_document", &self.max_chars_per_document)
            .field("correct_threshold", &self.correct_threshold)
            .field("incorrect_threshold", &self.incorrect_threshold)
            .finish()
    }
}

/// Judges retrieval with an external HTTP service answering
/// `POST {"query", "context"} -> {"score", "verdict"?, "reasoning"?}`.
///
/// One request per leading document gives the per-document scores (and reasons, when the
/// service sends its `reasoning`), one more with the joined context gives the overall score and
/// verdict; all run concurrently.
pub struct HttpEvaluator {
    config: HttpEvaluatorConfig,
    service: Arc<Service>,
}

/// What a spawned request needs.
struct Service {
    client: Client,
    url: Url,
    auth: Option<HeaderValue>,
}

impl HttpEvaluator {
    /// Validates `config` and builds the HTTP client.
    ///
    /// Fails with [`ErrorKind::InvalidInput`] for a URL that is not http(s), a zero timeout,
    /// `top_n` or `max_chars_per_document` of zero, thresholds outside `0 <= incorrect <=
    /// correct <= 1`, or an API key that cannot be sent in a header.
    pub fn new(config: HttpEvaluatorConfig) -> Result<Self, PortError> {
        check_http_url(&config.url, "evaluation service url")?;
        if config.top_n == 0 {
            return Err(PortError::invalid_input(
                "evaluator top_n must be at least 1",
            ));
        }
        if config.max_chars_per_document == 0 {
            return Err(PortError::invalid_input(
                "evaluator max_chars_per_document must be at least 1",
            ));
        }
        let (low, high) = (config.incorrect_threshold, config.correct_threshold);
        if !(low.is_finite() && high.is_finite() && 0.0 <= low && low <= high && high <= 1.0) {
            return Err(PortError::invalid_input(format!(
                "evaluator thresholds must satisfy 0 <= incorrect <= correct <= 1, got \
                 incorrect {low} and correct {high}"
            )));
        }
        let auth = bearer_header(config.api_key.as_deref())?;
        let client = build_client(config.timeout)?;
        let service = Arc::new(Service {
            client,
            url: config.url.clone(),
            auth,
        });
        Ok(Self { config, service })
    }
}

impl fmt::Debug for HttpEvaluator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEvaluator")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Which request a task ran.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// The joined context of the leading documents.
    Overall,
    /// One document, by index.
    Document(usize),
}

#[async_trait]
impl RelevanceEvaluator for HttpEvaluator {
    fn name(&self) -> &str {
        "http"
    }

    async fn evaluate(&self, query: &Query, documents: &[EvalDocument]) -> PortResult<Evaluation> {
        if documents.is_empty() {
            return Ok(Evaluation {
                verdict: Verdict::Incorrect,
                score: 0.0,
                document_scores: Vec::new(),
                document_reasons: Vec::new(),
                criteria: Vec::new(),
                reasoning: "no documents to evaluate".to_owned(),
                issues: Vec::new(),
            });
        }
        let max_chars = self.config.max_chars_per_document;
        let texts: Vec<&str> = documents
            .iter()
            .take(self.config.top_n)
            .map(|d| truncate_chars(&d.text, max_chars))
            .collect();
        let context = texts.join("\n\n");
        let query: Arc<str> = Arc::from(query.as_str());

        let mut tasks = JoinSet::new();
        let mut spawn = |target: Target, context: String| {
            let service = Arc::clone(&self.service);
            let query = Arc::clone(&query);
            tasks.spawn(async move { (target, service.judge(&query, &context).await) });
        };
        spawn(Target::Overall, context);
        // With a single document its context is the whole context: one request serves both.
        if texts.len() > 1 {
            for (i, text) in texts.iter().enumerate() {
                spawn(Target::Document(i), (*text).to_owned());
            }
        }

        let mut overall = None;
        let mut document_scores = vec![None; documents.len()];
        let mut document_reasons = vec![None; documents.len()];
        let mut issues = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((Target::Overall, Ok(judgement))) => overall = Some(judgement),
                Ok((Target::Overall, Err(e))) => return Err(e),
                Ok((Target::Document(i), Ok(judgement))) => {
                    if let Some(slot) = document_scores.get_mut(i) {
                        *slot = Some(judgement.score);
                    }
                    if let Some(slot) = document_reasons.get_mut(i) {
                        *slot = judgement.reasoning.as_deref().and_then(clip_reason);
                    }
                }
                Ok((Target::Document(i), Err(e))) => {
                    let id = documents.get(i).map_or("", |d| d.id.as_str());
                    tracing::warn!(document = id, error = %e, "per-document evaluation failed");
                    issues.push(format!("document {} (`{id}`) not scored: {e}", i + 1));
                }
                Err(e) => issues.push(format!("evaluation task failed: {e}")),
            }
        }
        let Some(overall) = overall else {
            return Err(PortError::new(
                ErrorKind::Internal,
                "overall evaluation task did not finish",
            ));
        };
        if texts.len() == 1 {
            if let Some(first) = document_scores.first_mut() {
                *first = Some(overall.score);
            }
            if let Some(first) = document_reasons.first_mut() {
                *first = overall.reasoning.as_deref().and_then(clip_reason);
            }
        }
        let mut evaluation = self.assemble(overall, document_scores, issues);
        evaluation.document_reasons = document_reasons;
        Ok(evaluation)
    }
}

impl HttpEvaluator {
    fn assemble(
        &self,
        overall: Judgement,
        document_scores: Vec<Option<f32>>,
        issues: Vec<String>,
    ) -> Evaluation {
        let score = overall.score;
        let (verdict, derived) = match overall.verdict {
            Some(verdict) => (verdict, false),
            None => (self.config.verdict_for(score), true),
        };
        let mut reasoning = overall
            .reasoning
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| format!("{WHAT} scored the context {score:.2}"));
        if derived {
            reasoning.push_str(&format!(
                " (verdict {verdict} derived from score {score:.2} with thresholds correct >= \
                 {:.2}, incorrect <= {:.2})",
                self.config.correct_threshold, self.config.incorrect_threshold
            ));
        }
        Evaluation {
            verdict,
            score,
            document_scores,
            document_reasons: Vec::new(),
            criteria: Vec::new(),
            reasoning,
            issues,
        }
    }
}

/// A validated answer of the service.
#[derive(Debug)]
pub(crate) struct Judgement {
    pub(crate) score: f32,
    verdict: Option<Verdict>,
    reasoning: Option<String>,
}

#[derive(Serialize)]
struct EvalRequest<'a> {
    query: &'a str,
    context: &'a str,
}

#[derive(Deserialize)]
struct EvalReply {
    score: f64,
    #[serde(default)]
    verdict: Option<String>,
    #[serde(default, alias = "reason")]
    reasoning: Option<String>,
}

impl Service {
    /// Sends one request, without retries: the engine bounds evaluation latency.
    async fn judge(&self, query: &str, context: &str) -> PortResult<Judgement> {
        let body = EvalRequest { query, context };
        let bytes = post_json(&self.client, &self.url, self.auth.as_ref(), &body, WHAT)
            .await
            .map_err(|f| f.into_port_error(1))?;
        parse_judgement(&bytes)
    }
}

/// Parses and validates an answer: score in [0, 1], known verdict if any.
pub(crate) fn parse_judgement(body: &[u8]) -> PortResult<Judgement> {
    let reply: EvalReply = serde_json::from_slice(body)
        .map_err(|e| PortError::internal(format!("malformed {WHAT} response"), e))?;
    let score = reply.score;
    if !(score.is_finite() && (0.0..=1.0).contains(&score)) {
        return Err(PortError::new(
            ErrorKind::Internal,
            format!("{WHAT} returned score {score} outside [0, 1]"),
        ));
    }
    let verdict = match reply.verdict.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(name) => Some(name.parse::<Verdict>().map_err(|_| {
            PortError::new(
                ErrorKind::Internal,
                format!(
                    "{WHAT} returned unknown verdict `{}`",
                    truncate_chars(name, 40)
                ),
            )
        })?),
    };
    // In [0, 1] by the check above: the narrowing only rounds to f32 precision.
    let score = score as f32;
    Ok(Judgement {
        score,
        verdict,
        reasoning: reply.reasoning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> HttpEvaluatorConfig {
        HttpEvaluatorConfig::new(Url::parse("http://127.0.0.1:9/eval").expect("url"))
    }

    #[test]
    fn defaults_follow_the_seed() {
        let c = config();
        assert_eq!(c.timeout, Duration::from_secs(5));
        assert_eq!(c.top_n, 5);
        assert_eq!(c.max_chars_per_document, 800);
        assert_eq!(c.correct_threshold, 0.7);
        assert_eq!(c.incorrect_threshold, 0.3);
        assert!(c.api_key.is_none());
    }

    #[test]
    fn thresholds_give_verdicts() {
        let c = config();
        assert_eq!(c.verdict_for(0.9), Verdict::Correct);
        assert_eq!(c.verdict_for(0.7), Verdict::Correct);
        assert_eq!(c.verdict_for(0.5), Verdict::Ambiguous);
        assert_eq!(c.verdict_for(0.3), Verdict::Incorrect);
        assert_eq!(c.verdict_for(0.0), Verdict::Incorrect);
    }

    #[test]
    fn new_rejects_bad_config() {
        let cases = [
            HttpEvaluatorConfig {
                url: Url::parse("file:///tmp/eval").expect("url"),
                ..config()
            },
            HttpEvaluatorConfig {
                timeout: Duration::ZERO,
                ..config()
            },
            HttpEvaluatorConfig {
                top_n: 0,
                ..config()
            },
            HttpEvaluatorConfig {
                max_chars_per_document: 0,
                ..config()
            },
            HttpEvaluatorConfig {
                correct_threshold: 0.2,
                ..config()
            },
            HttpEvaluatorConfig {
                correct_threshold: 1.5,
                ..config()
            },
            HttpEvaluatorConfig {
                incorrect_threshold: f32::NAN,
                ..config()
            },
            HttpEvaluatorConfig {
                api_key: Some("a\rb".into()),
                ..config()
            },
        ];
        for c in cases {
            let err = HttpEvaluator::new(c).expect_err("invalid");
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        }
        assert!(HttpEvaluator::new(config()).is_ok());
    }

    #[test]
    fn debug_redacts_the_key() {
        let c = HttpEvaluatorConfig {
            api_key: Some("eval-secret".into()),
            ..config()
        };
        let evaluator = HttpEvaluator::new(c).expect("valid");
        let shown = format!("{evaluator:?}");
        assert!(!shown.contains("eval-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn judgements_are_parsed_and_validated() {
        let j = parse_judgement(br#"{"score":0.85,"verdict":"correct","reasoning":"fits"}"#)
            .expect("ok");
        assert!((j.score - 0.85).abs() < 1e-6);
        assert_eq!(j.verdict, Some(Verdict::Correct));
        assert_eq!(j.reasoning.as_deref(), Some("fits"));
        for (body, verdict) in [
            (
                r#"{"score":1,"verdict":"RELEVANT"}"#,
                Some(Verdict::Correct),
            ),
            (
                r#"{"score":0.5,"verdict":"partial"}"#,
                Some(Verdict::Ambiguous),
            ),
            (
                r#"{"score":0,"verdict":"irrelevant"}"#,
                Some(Verdict::Incorrect),
            ),
            (r#"{"score":0.5,"verdict":null}"#, None),
            (r#"{"score":0.5,"verdict":""}"#, None),
            (r#"{"score":0.5}"#, None),
        ] {
            let j = parse_judgement(body.as_bytes()).expect(body);
            assert_eq!(j.verdict, verdict, "{body}");
        }
        for body in [
            "",
            "<html>oops</html>",
            r#"{"verdict":"correct"}"#,
            r#"{"score":"0.5"}"#,
            r#"{"score":null}"#,
            r#"{"score":1.01}"#,
            r#"{"score":-0.1}"#,
            r#"{"score":1e999}"#,
            r#"{"score":NaN}"#,
            r#"{"score":0.5,"verdict":"maybe"}"#,
            r#"{"score":0.5,"verdict":7}"#,
        ] {
            let err = parse_judgement(body.as_bytes()).expect_err(body);
            assert_eq!(err.kind(), ErrorKind::Internal, "{body}");
        }
    }
}
