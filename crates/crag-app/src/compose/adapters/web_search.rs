//! `[web_search]`: the web search of the `web` corrective action, by `provider`.

use std::sync::Arc;
use std::time::Duration;

use crate::compose::error::bail;
use crate::compose::Result;
use crag_ports::WebSearch;
use crag_websearch::{
    BraveConfig, BraveSearch, DuckDuckGoConfig, DuckDuckGoSearch, SearxngConfig, SearxngSearch,
};
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
    /// Brave Search's Web Search API (API key in `$api_key_env`).
    Brave,
}

/// `[web_search]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchSection {
    /// `off`, `searxng` (JSON API, `url` required), `duckduckgo` (HTML endpoint, no key),
    /// `brave` (Brave Search API, key in `$api_key_env`).
    pub provider: WebProvider,
    /// SearXNG base URL; for DuckDuckGo an override of the HTML endpoint; for Brave an
    /// override of the Web Search endpoint (default
    /// `https://api.search.brave.com/res/v1/web/search`).
    #[schemars(example = &"http://127.0.0.1:8888")]
    pub url: Option<String>,
    /// Per-request timeout (ms).
    pub timeout_ms: u64,
    /// Environment variable holding the Brave Search API key (`brave` only; required then).
    /// The key itself is never written in this file.
    pub api_key_env: String,
    /// Brave: ask for up to 5 extra snippets per result, appended to its text (only some
    /// Brave plans include them).
    pub extra_snippets: bool,
}

/// Environment variable of the Brave Search API key unless `api_key_env` names another.
pub const DEFAULT_BRAVE_KEY_ENV: &str = "BRAVE_SEARCH_API_KEY";

impl Default for WebSearchSection {
    fn default() -> Self {
        Self {
            provider: WebProvider::Off,
            url: None,
            timeout_ms: 5000,
            api_key_env: DEFAULT_BRAVE_KEY_ENV.into(),
            extra_snippets: false,
        }
    }
}

/// The web search of `web_search.provider`, if any; keys are read from the environment.
pub fn web_search(section: &WebSearchSection) -> Result<Option<Arc<dyn WebSearch>>> {
    web_search_with(section, &|var| std::env::var(var).ok())
}

/// [`web_search`], reading environment variables with `var`.
fn web_search_with(
    section: &WebSearchSection,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Arc<dyn WebSearch>>> {
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
        WebProvider::Brave => {
            let mut config = BraveConfig::new(brave_key(section, var)?);
            if let Some(raw) = &section.url {
                config.endpoint = parse_url("web_search.url", raw)?;
            }
            config.timeout = timeout;
            config.extra_snippets = section.extra_snippets;
            Some(Arc::new(BraveSearch::new(config)?))
        }
    })
}

/// The Brave Search API key: the non-empty value of `$web_search.api_key_env`.
fn brave_key(section: &WebSearchSection, var: &dyn Fn(&str) -> Option<String>) -> Result<String> {
    let name = section.api_key_env.trim();
    if name.is_empty() {
        bail!(
            "web_search.provider = \"brave\" needs web_search.api_key_env, the environment \
             variable holding the Brave Search API key"
        );
    }
    match var(name).map(|key| key.trim().to_owned()) {
        Some(key) if !key.is_empty() => Ok(key),
        _ => bail!(
            "web_search.provider = \"brave\" needs a Brave Search API key: the environment \
             variable {name} (web_search.api_key_env) is not set or empty"
        ),
    }
}

impl std::str::FromStr for WebProvider {
    type Err = String;
    fn from_str(raw: &str) -> Result<Self, String> {
        variant(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brave() -> WebSearchSection {
        WebSearchSection {
            provider: WebProvider::Brave,
            ..WebSearchSection::default()
        }
    }

    fn error(section: &WebSearchSection, var: &dyn Fn(&str) -> Option<String>) -> String {
        match web_search_with(section, var) {
            Ok(_) => panic!("{section:?} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn brave_reads_its_key_from_the_named_variable() {
        let key = |name: &str| (name == DEFAULT_BRAVE_KEY_ENV).then(|| " BSA-key-1234 ".into());
        let search = web_search_with(&brave(), &key).unwrap().unwrap();
        assert_eq!(search.name(), "brave");
        let mut other = brave();
        other.api_key_env = "MY_BRAVE_KEY".into();
        other.url = Some("http://127.0.0.1:9/res/v1/web/search".into());
        let search = web_search_with(&other, &|name: &str| {
            (name == "MY_BRAVE_KEY").then(|| "BSA-other".into())
        });
        assert_eq!(search.unwrap().unwrap().name(), "brave");
    }

    #[test]
    fn brave_without_a_key_is_a_clear_configuration_error() {
        let unset = |_: &str| None;
        let empty = |_: &str| Some("  ".to_owned());
        for var in [&unset as &dyn Fn(&str) -> Option<String>, &empty] {
            let message = error(&brave(), var);
            assert_eq!(
                message,
                "web_search.provider = \"brave\" needs a Brave Search API key: the environment \
                 variable BRAVE_SEARCH_API_KEY (web_search.api_key_env) is not set or empty"
            );
        }
        let mut unnamed = brave();
        unnamed.api_key_env = " ".into();
        assert!(error(&unnamed, &unset).contains("needs web_search.api_key_env"));
    }

    #[test]
    fn brave_refuses_a_bad_url_or_key_without_showing_the_key() {
        let mut bad_url = brave();
        bad_url.url = Some("not a url".into());
        let key = |_: &str| Some("BSA-secret".to_owned());
        assert!(error(&bad_url, &key).contains("web_search.url"));
        let newline = |_: &str| Some("BSA-secret\nx: 1".to_owned());
        let message = error(&brave(), &newline);
        assert!(message.contains("not a valid header value"), "{message}");
        assert!(!message.contains("secret"), "{message}");
    }
}
