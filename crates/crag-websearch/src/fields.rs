//! Cleaning of result fields and the collection of results: URL checks, de-duplication and
//! truncation.

use std::collections::HashSet;

use crag_ports::WebResult;
use scraper::Html;
use url::Url;

/// Trims `text` and collapses every run of whitespace (including no-break spaces) to one space.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Removes HTML tags and decodes entities when `text` looks like markup, then collapses
/// whitespace.
pub(crate) fn strip_html(text: &str) -> String {
    if !looks_like_markup(text) {
        return collapse_whitespace(text);
    }
    let fragment = Html::parse_fragment(text);
    let plain: String = fragment.root_element().text().collect();
    collapse_whitespace(&plain)
}

/// Whether `text` holds a tag (`<b>`, `</b>`, `<!--`) or an entity (`&amp;`, `&#39;`).
fn looks_like_markup(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.windows(2).any(|w| match w {
        [b'<', next] => next.is_ascii_alphabetic() || *next == b'/' || *next == b'!',
        [b'&', next] => next.is_ascii_alphanumeric() || *next == b'#',
        _ => false,
    })
}

/// Parses `raw` as an absolute `http`/`https` URL with a host; anything else is `None`.
pub(crate) fn web_url(raw: &str) -> Option<Url> {
    let url = Url::parse(raw.trim()).ok()?;
    check_web_url(url)
}

/// Keeps `url` only if it is `http`/`https` with a non-empty host.
pub(crate) fn check_web_url(url: Url) -> Option<Url> {
    let web = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some_and(|host| !host.is_empty());
    web.then_some(url)
}

/// Collects results up to a limit, keeping the first occurrence of each URL.
#[derive(Debug)]
pub(crate) struct Collector {
    limit: usize,
    seen: HashSet<String>,
    results: Vec<WebResult>,
}

impl Collector {
    /// An empty collector keeping at most `limit` results.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            seen: HashSet::new(),
            results: Vec::new(),
        }
    }

    /// Whether `limit` results were collected.
    pub(crate) fn is_full(&self) -> bool {
        self.results.len() >= self.limit
    }

    /// Adds a result unless the collector is full or its URL (ignoring the fragment) was seen.
    pub(crate) fn push(&mut self, title: String, url: Url, snippet: String) {
        if self.is_full() {
            return;
        }
        let mut key = url.clone();
        key.set_fragment(None);
        if self.seen.insert(key.into()) {
            self.results.push(WebResult {
                title,
                url: url.into(),
                snippet,
            });
        }
    }

    /// The collected results, in the order they were pushed.
    pub(crate) fn finish(self) -> Vec<WebResult> {
        self.results
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapse_whitespace_trims_and_joins() {
        assert_eq!(collapse_whitespace("  a \n\t b\u{a0}c  "), "a b c");
        assert_eq!(collapse_whitespace(" \n "), "");
    }

    #[test]
    fn strip_html_removes_tags_and_decodes_entities() {
        assert_eq!(
            strip_html("<b>Corrective</b>  RAG &amp; <em>self-grading</em>"),
            "Corrective RAG & self-grading"
        );
        assert_eq!(strip_html("it&#39;s"), "it's");
        assert_eq!(strip_html("a < b and c > d"), "a < b and c > d");
        assert_eq!(strip_html("AT & T"), "AT & T");
        assert_eq!(strip_html("<script"), "");
    }

    #[test]
    fn web_url_accepts_only_http_and_https() {
        assert_eq!(
            web_url(" https://example.org/a?b=1 ").map(String::from),
            Some("https://example.org/a?b=1".to_owned())
        );
        assert!(web_url("HTTP://Example.ORG").is_some());
        assert!(web_url("ftp://example.org/file").is_none());
        assert!(web_url("javascript:alert(1)").is_none());
        assert!(web_url("/relative/path").is_none());
        assert!(web_url("").is_none());
    }

    #[test]
    fn collector_dedupes_and_truncates() {
        let url = |s: &str| Url::parse(s).unwrap();
        let mut c = Collector::new(2);
        c.push("a".into(), url("https://a.example/"), String::new());
        c.push(
            "a again".into(),
            url("https://a.example/#top"),
            String::new(),
        );
        c.push("b".into(), url("https://b.example/"), String::new());
        assert!(c.is_full());
        c.push("c".into(), url("https://c.example/"), String::new());
        let titles: Vec<_> = c.finish().into_iter().map(|r| r.title).collect();
        assert_eq!(titles, ["a", "b"]);
    }
}
