//! The SearXNG adapter: `GET {base}/search?q=..&format=json`.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use crag_ports::{PortError, PortResult, WebResult, WebSearch};
use reqwest::header::ACCEPT;
use serde::Deserialize;
use url::Url;

use crate::fields::{strip_html, web_url, Collector};
use crate::http::{check_request, log_outcome, Http, DEFAULT_TIMEOUT, DEFAULT_USER_AGENT};

const NAME: &str = "searxng";

/// Configuration of [`SearxngSearch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearxngConfig {
    /// Root of the instance, e.g. `http://searxng:8080/` or `http://host/searx/`; `search` is
    /// appended to its path.
    pub base_url: Url,
    /// Bound on a whole request; default 5 s.
    pub timeout: Duration,
    /// Comma-separated SearXNG categories (`general`, `science`, ...); default: the instance's.
    pub categories: Option<String>,
    /// Search language (`en`, `de-CH`, `all`); default: the instance's.
    pub language: Option<String>,
    /// `User-Agent` header sent; default [`DEFAULT_USER_AGENT`].
    pub user_agent: String,
}

impl SearxngConfig {
    /// Returns the defaults for the instance at `base_url`: 5 s timeout, the instance's
    /// categories and language.
    pub fn new(base_url: Url) -> Self {
        Self {
            base_url,
            timeout: DEFAULT_TIMEOUT,
            categories: None,
            language: None,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
        }
    }
}

/// Web search through a SearXNG instance's JSON API (provider name `searxng`).
#[derive(Debug)]
pub struct SearxngSearch {
    http: Http,
    endpoint: Url,
    categories: Option<String>,
    language: Option<String>,
}

impl SearxngSearch {
    /// Builds the adapter; fails with `InvalidInput` when the base URL is not `http`/`https`,
    /// the timeout is zero or the user agent is not a valid header value.
    pub fn new(config: SearxngConfig) -> Result<Self, PortError> {
        let endpoint = search_endpoint(&config.base_url)?;
        let http = Http::new(NAME, config.timeout, &config.user_agent)?;
        Ok(Self {
            http,
            endpoint,
            categories: non_empty(config.categories),
            language: non_empty(config.language),
        })
    }

    /// Returns the URL searched, `{base_url}/search`.
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    async fn run(&self, query: &str, limit: usize) -> PortResult<Vec<WebResult>> {
        let query = check_request(query, limit)?;
        let mut url = self.endpoint.clone();
        {
            let mut pairs = url.query_pairs_mut();
            pairs.append_pair("q", query).append_pair("format", "json");
            if let Some(categories) = &self.categories {
                pairs.append_pair("categories", categories);
            }
            if let Some(language) = &self.language {
                pairs.append_pair("language", language);
            }
        }
        let request = self
            .http
            .client()
            .get(url)
            .header(ACCEPT, "application/json");
        let body = self.http.fetch(request).await?;
        parse_answer(&body, limit)
    }
}

#[async_trait]
impl WebSearch for SearxngSearch {
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

/// `{base}/search`, keeping any path prefix of `base` and dropping its query and fragment.
fn search_endpoint(base: &Url) -> PortResult<Url> {
    let invalid = || PortError::invalid_input("searxng base url must be an http or https url");
    let mut url = crate::fields::check_web_url(base.clone()).ok_or_else(invalid)?;
    url.set_query(None);
    url.set_fragment(None);
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    url.join("search").map_err(|_| invalid())
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The part of SearXNG's answer read; each result is read leniently, field by field.
#[derive(Deserialize)]
struct Answer {
    results: Vec<serde_json::Value>,
}

/// Turns a SearXNG JSON answer into at most `limit` cleaned, de-duplicated results.
pub(crate) fn parse_answer(body: &[u8], limit: usize) -> PortResult<Vec<WebResult>> {
    let answer: Answer = serde_json::from_slice(body).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => {
            PortError::internal("searxng answer has no results list", e)
        }
        _ => PortError::internal("searxng answer is not json", e),
    })?;
    let mut collector = Collector::new(limit);
    for item in &answer.results {
        if collector.is_full() {
            break;
        }
        let field = |name: &str| item.get(name).and_then(serde_json::Value::as_str);
        let Some(url) = field("url").and_then(web_url) else {
            continue;
        };
        let title = strip_html(field("title").unwrap_or_default());
        let snippet = strip_html(field("content").unwrap_or_default());
        collector.push(title, url, snippet);
    }
    Ok(collector.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crag_ports::ErrorKind;

    fn endpoint(base: &str) -> String {
        search_endpoint(&Url::parse(base).unwrap()).unwrap().into()
    }

    #[test]
    fn endpoint_keeps_the_path_prefix() {
        assert_eq!(
            endpoint("http://searxng:8080"),
            "http://searxng:8080/search"
        );
        assert_eq!(endpoint("http://host/searx"), "http://host/searx/search");
        assert_eq!(
            endpoint("http://host/searx/?x=1#f"),
            "http://host/searx/search"
        );
        let bad = search_endpoint(&Url::parse("file:///tmp/x").unwrap()).unwrap_err();
        assert_eq!(bad.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn parse_answer_reads_results_leniently() {
        let body = br#"{"results": [
            {"url": 7, "title": "number url"},
            {"url": "https://a.example/", "title": null, "content": ["x"]},
            "not an object",
            {"url": "https://b.example/", "title": " B ", "content": "b"}
        ]}"#;
        let results = parse_answer(body, 10).unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].title, "");
        assert_eq!(results[1].title, "B");
    }

    #[test]
    fn parse_answer_rejects_other_shapes() {
        for body in [&b"[]"[..], b"{}", b"{\"results\": {}}", b"null"] {
            let e = parse_answer(body, 5).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Internal);
            assert_eq!(e.to_string(), "searxng answer has no results list");
        }
        for body in [&b""[..], b"<html>", b"{\"results\": ["] {
            let e = parse_answer(body, 5).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Internal);
            assert_eq!(e.to_string(), "searxng answer is not json");
        }
    }
}
