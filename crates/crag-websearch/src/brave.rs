//! The Brave Search adapter: `GET {endpoint}?q=..&count=N` with the API key in
//! `X-Subscription-Token`.

use std::fmt;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use crag_ports::{PortError, PortResult, WebResult, WebSearch};
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT};
use reqwest::StatusCode;
use serde::Deserialize;
use url::Url;

use crate::fields::{check_web_url, strip_html, web_url, Collector};
use crate::http::{check_request, log_outcome, Http, DEFAULT_TIMEOUT, DEFAULT_USER_AGENT};

const NAME: &str = "brave";

/// Brave Search's Web Search API endpoint, the default.
pub const DEFAULT_BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";

/// Header carrying the API key.
const TOKEN_HEADER: &str = "x-subscription-token";

/// Most results Brave returns for one request (its `count` is 1..=20).
pub const BRAVE_MAX_COUNT: usize = 20;

/// Longest query Brave accepts, in characters and in words; longer ones are cut.
const MAX_QUERY_CHARS: usize = 400;
const MAX_QUERY_WORDS: usize = 50;

/// Configuration of [`BraveSearch`]. Its `Debug` does not show the key.
#[derive(Clone, PartialEq, Eq)]
pub struct BraveConfig {
    /// The Web Search endpoint; default [`DEFAULT_BRAVE_URL`].
    pub endpoint: Url,
    /// The subscription token (API key) of a Brave Search API plan.
    pub api_key: String,
    /// Bound on a whole request; default 5 s.
    pub timeout: Duration,
    /// `User-Agent` header sent; default [`DEFAULT_USER_AGENT`].
    pub user_agent: String,
    /// Asks for up to 5 extra snippets per result (`extra_snippets=true`), appended to the
    /// snippet; only some plans include them. Default false.
    pub extra_snippets: bool,
}

impl BraveConfig {
    /// Returns the defaults with `api_key`: the public endpoint, 5 s timeout, no extra snippets.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            endpoint: Url::parse(DEFAULT_BRAVE_URL).expect("the default brave url is a valid url"),
            api_key: api_key.into(),
            timeout: DEFAULT_TIMEOUT,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            extra_snippets: false,
        }
    }
}

impl fmt::Debug for BraveConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BraveConfig")
            .field("endpoint", &self.endpoint.as_str())
            .field("api_key", &"<redacted>")
            .field("timeout", &self.timeout)
            .field("user_agent", &self.user_agent)
            .field("extra_snippets", &self.extra_snippets)
            .finish()
    }
}

/// Web search through Brave Search's Web Search API (provider name `brave`).
///
/// Non-2xx answers are `Unavailable` with what they mean: a rejected key (401, 403, or 422
/// with Brave's `SUBSCRIPTION_TOKEN_INVALID`), an exhausted rate limit or quota (429).
#[derive(Debug)]
pub struct BraveSearch {
    http: Http,
    endpoint: Url,
    /// The key, marked sensitive so that `Debug` hides it.
    token: HeaderValue,
    extra_snippets: bool,
}

impl BraveSearch {
    /// Builds the adapter; fails with `InvalidInput` when the key is empty or not a valid
    /// header value, the endpoint is not `http`/`https`, the timeout is zero or the user agent
    /// is not a valid header value.
    pub fn new(config: BraveConfig) -> Result<Self, PortError> {
        let key = config.api_key.trim();
        if key.is_empty() {
            return Err(PortError::invalid_input("brave api key is empty"));
        }
        let mut token = HeaderValue::from_str(key)
            .map_err(|_| PortError::invalid_input("brave api key is not a valid header value"))?;
        token.set_sensitive(true);
        let mut endpoint = check_web_url(config.endpoint).ok_or_else(|| {
            PortError::invalid_input("brave endpoint must be an http or https url")
        })?;
        endpoint.set_query(None);
        endpoint.set_fragment(None);
        let http = Http::new(NAME, config.timeout, &config.user_agent)?;
        Ok(Self {
            http,
            endpoint,
            token,
            extra_snippets: config.extra_snippets,
        })
    }

    /// Returns the URL searched.
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    async fn run(&self, query: &str, limit: usize) -> PortResult<Vec<WebResult>> {
        let query = bounded_query(check_request(query, limit)?);
        let mut url = self.endpoint.clone();
        {
            let mut pairs = url.query_pairs_mut();
            pairs
                .append_pair("q", query)
                .append_pair("count", &limit.min(BRAVE_MAX_COUNT).to_string());
            if self.extra_snippets {
                pairs.append_pair("extra_snippets", "true");
            }
        }
        let request = self
            .http
            .client()
            .get(url)
            .header(ACCEPT, "application/json")
            .header(TOKEN_HEADER, self.token.clone());
        let body = self.http.fetch_explained(request, explain_status).await?;
        parse_answer(&body, limit)
    }
}

#[async_trait]
impl WebSearch for BraveSearch {
    fn name(&self) -> &str {
        NAME
    }

    async fn search(&self, query: &str, limit: usize) -> PortResult<Vec<WebResult>> {
        let started = Instant::now();
        let outcome = self.run(query, limit).await;
        log_outcome(NAME, started, &outcome);
        outcome
    }
}

/// `query` cut to Brave's bounds (50 words, 400 characters) at a word boundary; a single word
/// longer than 400 characters is cut inside it.
pub(crate) fn bounded_query(query: &str) -> &str {
    let mut end = 0;
    for (words, (start, word)) in word_spans(query).enumerate() {
        let word_end = start + word.len();
        if words >= MAX_QUERY_WORDS || query[..word_end].chars().count() > MAX_QUERY_CHARS {
            break;
        }
        end = word_end;
    }
    if end == 0 {
        let cut = query
            .char_indices()
            .nth(MAX_QUERY_CHARS)
            .map_or(query.len(), |(i, _)| i);
        return &query[..cut];
    }
    &query[..end]
}

/// The words of `text` with their byte offsets.
fn word_spans(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_whitespace()
        .map(move |word| (word.as_ptr() as usize - text.as_ptr() as usize, word))
}

/// What a non-2xx answer of Brave means, from its status and the `code` of its error body.
fn explain_status(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Option<String> {
    let code = error_code(body);
    let key = "the api key is missing, invalid or not subscribed to the web search api";
    match (status.as_u16(), code.as_deref()) {
        (401 | 403, _) | (_, Some("SUBSCRIPTION_TOKEN_INVALID")) => Some(key.to_owned()),
        (429, _) | (_, Some("RATE_LIMITED")) => {
            let mut text = "the rate limit or quota of the api key is exhausted".to_owned();
            if let Some(reset) = header_digits(headers, "x-ratelimit-reset") {
                text.push_str(&format!(" (x-ratelimit-reset: {reset})"));
            }
            Some(text)
        }
        (_, Some("OPTION_NOT_IN_PLAN")) => {
            Some("an option asked for (extra snippets?) is not in the api key's plan".to_owned())
        }
        (_, Some("VALIDATION")) => Some("brave refused the request parameters".to_owned()),
        (_, Some(other)) => Some(format!("error code {other}")),
        _ => None,
    }
}

/// The `error.code` of Brave's error body when it is a short upper-case token.
fn error_code(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let code = value.get("error")?.get("code")?.as_str()?;
    let token = !code.is_empty()
        && code.len() <= 40
        && code.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
    token.then(|| code.to_owned())
}

/// Header `name` when it holds only digits, commas and spaces (at most 40 characters).
fn header_digits(headers: &HeaderMap, name: &str) -> Option<String> {
    let value = headers.get(name)?.to_str().ok()?.trim();
    let plain = !value.is_empty()
        && value.len() <= 40
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b',' || b == b' ');
    plain.then(|| value.to_owned())
}

/// The part of Brave's answer read: its type and, when it found web pages, their list (Brave
/// leaves `web` out when there are none).
#[derive(Deserialize)]
struct Answer {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
    results: Vec<serde_json::Value>,
}

/// Turns a Brave JSON answer into at most `limit` cleaned, de-duplicated results; the snippet
/// is the description followed by any extra snippets.
pub(crate) fn parse_answer(body: &[u8], limit: usize) -> PortResult<Vec<WebResult>> {
    let not_search = || PortError::new(crag_ports::ErrorKind::Internal, SHAPE_ERROR);
    let answer: Answer = serde_json::from_slice(body).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => PortError::internal(SHAPE_ERROR, e),
        _ => PortError::internal("brave answer is not json", e),
    })?;
    if answer.kind != "search" {
        return Err(not_search());
    }
    let results = answer.web.map(|w| w.results).unwrap_or_default();
    let mut collector = Collector::new(limit);
    for item in &results {
        if collector.is_full() {
            break;
        }
        let field = |name: &str| item.get(name).and_then(serde_json::Value::as_str);
        let Some(url) = field("url").and_then(web_url) else {
            continue;
        };
        let title = strip_html(field("title").unwrap_or_default());
        collector.push(title, url, snippet(item));
    }
    Ok(collector.finish())
}

const SHAPE_ERROR: &str = "brave answer is not a web search answer";

/// The cleaned description, then each non-empty extra snippet not already contained in what
/// precedes it, joined by spaces.
fn snippet(item: &serde_json::Value) -> String {
    let description = item
        .get("description")
        .and_then(serde_json::Value::as_str)
        .map(strip_html)
        .unwrap_or_default();
    let mut parts = vec![description];
    let extras = item
        .get("extra_snippets")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .map(strip_html);
    for extra in extras {
        if !extra.is_empty() && !parts.iter().any(|p| p.contains(extra.as_str())) {
            parts.push(extra);
        }
    }
    parts.retain(|p| !p.is_empty());
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crag_ports::ErrorKind;

    #[test]
    fn bounded_query_keeps_whole_words_within_brave_limits() {
        assert_eq!(bounded_query("corrective rag"), "corrective rag");
        let words: Vec<String> = (0..60).map(|i| format!("w{i}")).collect();
        let long = words.join(" ");
        assert_eq!(bounded_query(&long), words[..50].join(" "));
        let wide = format!("{} tail", "é".repeat(399));
        assert_eq!(bounded_query(&wide), "é".repeat(399));
        let one = "x".repeat(450);
        assert_eq!(bounded_query(&one).len(), 400);
    }

    #[test]
    fn statuses_and_error_codes_are_explained() {
        let none = HeaderMap::new();
        let body = br#"{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"secret"}}"#;
        let key = explain_status(StatusCode::UNPROCESSABLE_ENTITY, &none, body).unwrap();
        assert!(key.contains("api key"), "{key}");
        assert!(!key.contains("secret"), "{key}");
        let unauthorized = explain_status(StatusCode::UNAUTHORIZED, &none, b"").unwrap();
        assert_eq!(unauthorized, key);
        let mut headers = HeaderMap::new();
        headers.insert("x-ratelimit-reset", HeaderValue::from_static("1, 1419704"));
        let limited = explain_status(StatusCode::TOO_MANY_REQUESTS, &headers, b"").unwrap();
        assert!(limited.contains("rate limit") && limited.contains("1, 1419704"));
        let odd = br#"{"error":{"code":"not a <token>"}}"#;
        assert_eq!(explain_status(StatusCode::BAD_GATEWAY, &none, odd), None);
        let validation = br#"{"error":{"code":"VALIDATION"}}"#;
        assert!(
            explain_status(StatusCode::UNPROCESSABLE_ENTITY, &none, validation)
                .unwrap()
                .contains("parameters")
        );
    }

    #[test]
    fn parse_answer_reads_results_leniently() {
        let body = br#"{"type": "search", "web": {"type": "search", "results": [
            {"url": 7, "title": "number url"},
            {"url": "https://a.example/", "title": null, "description": ["x"]},
            "not an object",
            {"url": "https://b.example/", "title": " <strong>B</strong> ",
             "description": "b &amp; <strong>c</strong>", "extra_snippets": ["b &amp; c", 3, "", "d"]}
        ]}}"#;
        let results = parse_answer(body, 10).unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].title, "");
        assert_eq!(results[0].snippet, "");
        assert_eq!(results[1].title, "B");
        assert_eq!(results[1].snippet, "b & c d");
    }

    #[test]
    fn parse_answer_rejects_other_shapes() {
        for body in [
            &b"[]"[..],
            b"{}",
            b"{\"type\": \"ErrorResponse\"}",
            b"{\"type\": \"search\", \"web\": {}}",
            b"{\"type\": \"search\", \"web\": {\"results\": {}}}",
            b"null",
        ] {
            let e = parse_answer(body, 5).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Internal);
            assert_eq!(e.to_string(), SHAPE_ERROR);
        }
        for body in [&b""[..], b"<html>", b"{\"type\": \"search\", \"web\": {"] {
            let e = parse_answer(body, 5).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Internal);
            assert_eq!(e.to_string(), "brave answer is not json");
        }
    }

    #[test]
    fn debug_hides_the_key() {
        let config = BraveConfig::new("BSA-secret-key");
        assert!(!format!("{config:?}").contains("secret"));
        let search = BraveSearch::new(config).unwrap();
        assert!(!format!("{search:?}").contains("secret"));
    }
}
