//! `[web_search]`: the web search of the `web` corrective action, by `provider`.

use std::sync::Arc;
use std::time::Duration;

use crate::compose::Result;
use crag_ports::WebSearch;
use crag_websearch::{DuckDuckGoConfig, DuckDuckGoSearch, SearxngConfig, SearxngSearch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{parse_url, variant};

/// Web search providers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebProvider {
    /// No web search.
    #[default]
    Off,
    /// A SearXNG instance's JSON API (`url` required).
    Searxng,
    /// DuckDuckGo's HTML endpoint (no key).
    Duckduckgo,
}

/// `[web_search]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchSection {
    /// `off`, `searxng` (JSON API, `url` required), `duckduckgo` (HTML endpoint, no key).
    pub provider: WebProvider,
    /// SearXNG base URL; for DuckDuckGo an override of the HTML endpoint.
    #[schemars(example = &"http://127.0.0.1:8888")]
    pub url: Option<String>,
    /// Per-request timeout (ms).
    pub timeout_ms: u64,
}

impl Default for WebSearchSection {
    fn default() -> Self {
        Self {
            provider: WebProvider::Off,
            url: None,
            timeout_ms: 5000,
        }
    }
}

/// The web search of `web_search.provider`, if any.
pub fn web_search(section: &WebSearchSection) -> Result<Option<Arc<dyn WebSearch>>> {
    let timeout = Duration::from_millis(section.timeout_ms.max(1));
    Ok(match section.provider {
        WebProvider::Off => None,
        WebProvider::Searxng => {
            let url = parse_url("web_search.url", section.url.as_deref().unwrap_or(""))?;
            let mut config = SearxngConfig::new(url);
            config.timeout = timeout;
            Some(Arc::new(SearxngSearch::new(config)?))
        }
        WebProvider::Duckduckgo => {
            let mut config = DuckDuckGoConfig::default();
            if let Some(raw) = &section.url {
                config.base_url = parse_url("web_search.url", raw)?;
            }
            config.timeout = timeout;
            Some(Arc::new(DuckDuckGoSearch::new(config)?))
        }
    })
}

impl std::str::FromStr for WebProvider {
    type Err = String;
    fn from_str(raw: &str) -> Result<Self, String> {
        variant(raw)
    }
}
