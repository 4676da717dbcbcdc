//! The DuckDuckGo adapter: a form `POST` to the HTML endpoint, whose result page is scraped.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use crag_ports::{ErrorKind, PortError, PortResult, WebResult, WebSearch};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use scraper::{CaseSensitivity, Html, Selector};
use url::Url;

use crate::fields::{check_web_url, collapse_whitespace, Collector};
use crate::http::{check_request, log_outcome, Http, DEFAULT_TIMEOUT, DEFAULT_USER_AGENT};

const NAME: &str = "duckduckgo";

/// DuckDuckGo's JavaScript-free result page, the default endpoint.
pub const DEFAULT_DUCKDUCKGO_URL: &str = "https://html.duckduckgo.com/html/";

/// Configuration of [`DuckDuckGoSearch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuckDuckGoConfig {
    /// The HTML endpoint the form is posted to; default [`DEFAULT_DUCKDUCKGO_URL`].
    pub base_url: Url,
    /// Bound on a whole request; default 5 s.
    pub timeout: Duration,
    /// `User-Agent` header sent; default [`DEFAULT_USER_AGENT`].
    pub user_agent: String,
    /// DuckDuckGo region (`kl`), e.g. `us-en`, `de-de`, `wt-wt` (none); default: none sent.
    pub region: Option<String>,
}

impl Default for DuckDuckGoConfig {
    fn default() -> Self {
        Self {
            base_url: Url::parse(DEFAULT_DUCKDUCKGO_URL)
                .expect("the default duckduckgo url is a valid url"),
            timeout: DEFAULT_TIMEOUT,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            region: None,
        }
    }
}

/// Web search by scraping DuckDuckGo's HTML result page (provider name `duckduckgo`).
///
/// A page showing DuckDuckGo's bot challenge instead of results is an `Unavailable` error,
/// not an empty list; a page that is neither results, "no results" nor the challenge is
/// `Internal` (the markup probably changed).
#[derive(Debug)]
pub struct DuckDuckGoSearch {
    http: Http,
    endpoint: Url,
    region: Option<String>,
    selectors: Selectors,
}

impl DuckDuckGoSearch {
    /// Builds the adapter; fails with `InvalidInput` when the base URL is not `http`/`https`,
    /// the timeout is zero or the user agent is not a valid header value.
    pub fn new(config: DuckDuckGoConfig) -> Result<Self, PortError> {
        let endpoint = check_web_url(config.base_url).ok_or_else(|| {
            PortError::invalid_input("duckduckgo base url must be an http or https url")
        })?;
        let http = Http::new(NAME, config.timeout, &config.user_agent)?;
        let region = config
            .region
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty());
        Ok(Self {
            http,
            endpoint,
            region,
            selectors: Selectors::new()?,
        })
    }

    async fn run(&self, query: &str, limit: usize) -> PortResult<Vec<WebResult>> {
        let query = check_request(query, limit)?;
        let form = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("q", query);
            if let Some(region) = &self.region {
                form.append_pair("kl", region);
            }
            form.finish()
        };
        let request = self
            .http
            .client()
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(ACCEPT, "text/html")
            .body(form);
        let body = self.http.fetch(request).await?;
        parse_page(
            &String::from_utf8_lossy(&body),
            &self.endpoint,
            limit,
            &self.selectors,
        )
    }
}

#[async_trait]
impl WebSearch for DuckDuckGoSearch {
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

/// The CSS selectors of the result page, parsed once.
#[derive(Debug)]
pub(crate) struct Selectors {
    /// One result block (organic, ad or the "no results" notice).
    result: Selector,
    /// The title link of a result.
    title: Selector,
    /// The snippet of a result.
    snippet: Selector,
    /// Any part of the bot challenge ("anomaly") page.
    challenge: Selector,
    /// Parts of a genuine result page, present even without results.
    page: Selector,
}

impl Selectors {
    pub(crate) fn new() -> PortResult<Self> {
        let parse = |css: &str| {
            Selector::parse(css).map_err(|_| {
                PortError::new(ErrorKind::Internal, format!("invalid css selector {css}"))
            })
        };
        Ok(Self {
            result: parse(".result")?,
            title: parse("a.result__a")?,
            snippet: parse(".result__snippet")?,
            challenge: parse(
                "#challenge-form, .anomaly-modal__modal, .anomaly-modal__title, \
                 form[action*=\"anomaly\"]",
            )?,
            page: parse("#links, .serp__results, .no-results, .result--no-result")?,
        })
    }
}

/// Scrapes a result page into at most `limit` results; `base` resolves relative links.
pub(crate) fn parse_page(
    html: &str,
    base: &Url,
    limit: usize,
    selectors: &Selectors,
) -> PortResult<Vec<WebResult>> {
    let document = Html::parse_document(html);
    let mut collector = Collector::new(limit);
    let mut blocks = 0_usize;
    for block in document.select(&selectors.result) {
        blocks += 1;
        if collector.is_full() {
            break;
        }
        let element = block.value();
        if element.has_class("result--ad", CaseSensitivity::CaseSensitive)
            || element.has_class("result--no-result", CaseSensitivity::CaseSensitive)
        {
            continue;
        }
        let Some(link) = block.select(&selectors.title).next() else {
            continue;
        };
        let Some(url) = link.attr("href").and_then(|href| result_url(base, href)) else {
            continue;
        };
        let title = collapse_whitespace(&link.text().collect::<String>());
        let snippet = block
            .select(&selectors.snippet)
            .next()
            .map(|s| collapse_whitespace(&s.text().collect::<String>()))
            .unwrap_or_default();
        collector.push(title, url, snippet);
    }
    let results = collector.finish();
    if !results.is_empty() {
        return Ok(results);
    }
    if document.select(&selectors.challenge).next().is_some() {
        return Err(PortError::new(
            ErrorKind::Unavailable,
            "duckduckgo blocked the request",
        ));
    }
    if blocks > 0 || document.select(&selectors.page).next().is_some() {
        return Ok(results);
    }
    Err(PortError::new(
        ErrorKind::Internal,
        "duckduckgo answered with an unrecognised page",
    ))
}

/// Resolves a result link: unwraps DuckDuckGo's `//duckduckgo.com/l/?uddg=<url>` redirects
/// and drops ads (`duckduckgo.com/y.js`), redirects without a target and non-web links.
fn result_url(base: &Url, href: &str) -> Option<Url> {
    // Links back to DuckDuckGo, or to the configured endpoint's host (a mirror, a test server).
    let internal = |url: &Url| {
        url.host_str().is_some_and(|host| {
            host == "duckduckgo.com"
                || host.ends_with(".duckduckgo.com")
                || Some(host) == base.host_str()
        })
    };
    let link = base.join(href.trim()).ok()?;
    let is_redirect = internal(&link) && (link.path() == "/l/" || link.path() == "/l");
    let target = if is_redirect {
        let (_, target) = link.query_pairs().find(|(key, _)| key == "uddg")?;
        Url::parse(target.trim()).ok()?
    } else {
        link
    };
    if internal(&target) && target.path().starts_with("/y.js") {
        return None;
    }
    check_web_url(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(href: &str) -> Option<String> {
        let base = Url::parse(DEFAULT_DUCKDUCKGO_URL).unwrap();
        result_url(&base, href).map(String::from)
    }

    #[test]
    fn default_config_points_at_the_html_endpoint() {
        let config = DuckDuckGoConfig::default();
        assert_eq!(config.base_url.as_str(), DEFAULT_DUCKDUCKGO_URL);
        assert_eq!(config.timeout, DEFAULT_TIMEOUT);
        assert!(DuckDuckGoSearch::new(config).is_ok());
    }

    #[test]
    fn result_url_unwraps_redirects() {
        assert_eq!(
            resolve(
                "//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fa%3Fb%3D1%26c%3D2&rut=ab12"
            )
            .as_deref(),
            Some("https://example.org/a?b=1&c=2")
        );
        assert_eq!(
            resolve("/l/?uddg=https%3A%2F%2Fexample.org%2F&rut=ab12").as_deref(),
            Some("https://example.org/")
        );
        assert_eq!(
            resolve("https://example.org/direct").as_deref(),
            Some("https://example.org/direct")
        );
        // Only DuckDuckGo's own `/l/` links are redirects.
        assert_eq!(
            resolve("https://example.org/l/?uddg=https%3A%2F%2Fother.example%2F").as_deref(),
            Some("https://example.org/l/?uddg=https%3A%2F%2Fother.example%2F")
        );
        assert_eq!(
            resolve("https://example.org/l").as_deref(),
            Some("https://example.org/l")
        );
    }

    #[test]
    fn result_url_drops_ads_and_non_web_links() {
        assert_eq!(
            resolve("https://duckduckgo.com/y.js?ad_domain=x.example&u3=https%3A%2F%2Fx"),
            None
        );
        assert_eq!(resolve("//duckduckgo.com/l/?rut=ab12"), None);
        assert_eq!(
            resolve("//duckduckgo.com/l/?uddg=javascript%3Aalert(1)"),
            None
        );
        assert_eq!(resolve("javascript:void(0)"), None);
        assert_eq!(resolve("mailto:a@example.org"), None);
    }

    #[test]
    fn parse_page_tells_unrecognised_pages_from_empty_ones() {
        let selectors = Selectors::new().unwrap();
        let base = Url::parse(DEFAULT_DUCKDUCKGO_URL).unwrap();
        let page = |html: &str| parse_page(html, &base, 5, &selectors);
        assert_eq!(
            page("<div id=\"links\" class=\"results\"></div>").unwrap(),
            []
        );
        let unknown = page("<html><body><p>hello</p></body></html>").unwrap_err();
        assert_eq!(unknown.kind(), ErrorKind::Internal);
        let garbage = page("\u{0}<<<>>>&&&").unwrap_err();
        assert_eq!(garbage.kind(), ErrorKind::Internal);
    }
}
