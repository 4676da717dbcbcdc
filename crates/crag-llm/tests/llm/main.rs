//! Integration tests of crag-llm against fake HTTP servers on 127.0.0.1.

mod chat;
mod evaluator;
mod rerank;
mod support;
