use std::fmt::Debug;

use async_trait::async_trait;

use crate::PortResult;

/// One web search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebResult {
    /// Page title.
    pub title: String,
    /// Page URL.
    pub url: String,
    /// Text snippet shown by the search engine.
    pub snippet: String,
}

/// Searches the web.
#[async_trait]
pub trait WebSearch: Debug + Send + Sync + 'static {
    /// Returns the provider name, e.g. `searxng`, `duckduckgo`.
    fn name(&self) -> &str;

    /// Returns at most `limit` results for `query`, best first. Timeouts are errors of kind
    /// `Timeout`, unreachable or failing services `Unavailable`, unreadable answers `Internal`.
    async fn search(&self, query: &str, limit: usize) -> PortResult<Vec<WebResult>>;
}
