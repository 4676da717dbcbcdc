//! Web search adapters of crag: the [`WebSearch`](crag_ports::WebSearch) port over a SearXNG
//! instance's JSON API, over DuckDuckGo's HTML endpoint and over Brave Search's Web Search API.
//!
//! The engine calls web search as its corrective fallback when local retrieval is judged
//! irrelevant; a deployment picks one provider and holds it as `Arc<dyn WebSearch>`.
//!
//! # Providers
//!
//! - [`SearxngSearch`] (`searxng`): `GET {base_url}/search?q=..&format=json`, plus
//!   `categories` and `language` when configured. The instance must allow the `json` format
//!   (`search.formats` in its `settings.yml`), otherwise it answers 403. The base URL may carry
//!   a path prefix (`http://host/searx/`).
//! - [`DuckDuckGoSearch`] (`duckduckgo`): `POST` of the form `q=..` (and `kl=<region>`) to
//!   `https://html.duckduckgo.com/html/`, whose result page is scraped: the title of
//!   `a.result__a`, its link (DuckDuckGo's `//duckduckgo.com/l/?uddg=<url>` redirects are
//!   unwrapped) and `.result__snippet`. Ads (`.result--ad`) are skipped. Scraping is brittle by
//!   nature and DuckDuckGo rate-limits automated clients: prefer SearXNG in production.
//! - [`BraveSearch`] (`brave`): `GET {endpoint}?q=..&count=N` (`count` at most 20, plus
//!   `extra_snippets=true` when configured) to `https://api.search.brave.com/res/v1/web/search`
//!   with the API key in `X-Subscription-Token` and `Accept: application/json`. The answer's
//!   `web.results` give title, `url` and `description` (its `<strong>` markup removed), the
//!   `extra_snippets` appended to the snippet. Queries are cut to Brave's 50 words and 400
//!   characters. The key never appears in `Debug` output or error messages.
//!
//! # Defaults
//!
//! All time out after 5 s ([`DEFAULT_TIMEOUT`]); the timeout bounds the whole request
//! (connecting, sending, reading the answer). Answers above 4 MiB are refused.
//!
//! # Results
//!
//! At most `limit` results, in the provider's order. Titles and snippets are trimmed and their
//! whitespace collapsed (SearXNG's and Brave's also lose any HTML markup); URLs are parsed and normalised.
//! Results without an `http`/`https` URL are skipped and repeated URLs keep their first
//! occurrence. A search without hits is `Ok(vec![])`.
//!
//! # Errors
//!
//! Every failure is a [`PortError`](crag_ports::PortError) whose kind the engine branches on:
//!
//! | Cause | Kind |
//! |---|---|
//! | empty query, `limit` 0; bad configuration in `new` | `InvalidInput` |
//! | no answer within the timeout | `Timeout` |
//! | connection refused or reset, DNS failure, HTTP 429, 5xx or any other non-2xx status, DuckDuckGo's bot challenge ("duckduckgo blocked the request") | `Unavailable` |
//! | body not JSON or without a `results` list (SearXNG), not a `"type": "search"` answer (Brave), unrecognised page (DuckDuckGo), answer too large | `Internal` |
//!
//! Brave's non-2xx messages say what the status means: "brave answered http 401 Unauthorized:
//! the api key is missing, invalid or not subscribed to the web search api" (also for 403 and
//! for a 422 with Brave's `SUBSCRIPTION_TOKEN_INVALID`), "brave answered http 429 Too Many
//! Requests: the rate limit or quota of the api key is exhausted".
//!
//! Messages are short and never contain the answer's body or the query. Each search is logged
//! with `tracing`: `debug` with provider, latency and result count, `warn` on failure.

mod brave;
mod duckduckgo;
mod fields;
mod http;
mod searxng;

#[cfg(test)]
mod prop_tests;

pub use brave::{BraveConfig, BraveSearch, BRAVE_MAX_COUNT, DEFAULT_BRAVE_URL};
pub use duckduckgo::{DuckDuckGoConfig, DuckDuckGoSearch, DEFAULT_DUCKDUCKGO_URL};
pub use http::{DEFAULT_TIMEOUT, DEFAULT_USER_AGENT};
pub use searxng::{SearxngConfig, SearxngSearch};
