//! Integration tests of the web search adapters against a local HTTP server on 127.0.0.1
//! serving recorded answers from `tests/fixtures/`.

mod brave;
mod duckduckgo;
mod searxng;
mod server;
