//! Every gap detector of the workspace runs the port's conformance suite: the code detector
//! reading text, the code detector reading a symbol graph (the in-memory symbol index filled
//! by the engine's own ingest), and the LLM detector in both prompt formats over a scripted
//! language model (the project's test double for a model server; no model server runs here).

use std::sync::Arc;

use crag_core::{ChunkKind, Document, DocumentId};
use crag_engine::{CodeGapDetector, Engine, EngineConfig, LlmGapDetector, NoProgress, Scope};
use crag_ports::fakes::{
    HashEmbedder, InMemoryKeywordIndex, InMemorySymbolIndex, InMemoryVectorIndex,
    ScriptedLanguageModel,
};
use crag_ports::testsuite::{gap_detector_suite, sample_gap_context, SAMPLE_GAP_QUESTION};
use crag_ports::{ContextItem, GapDetector, KeywordIndex, SymbolIndex};

#[tokio::test]
async fn the_lexical_code_detector_passes_the_suite() {
    let detector = CodeGapDetector::lexical();
    gap_detector_suite(&detector, SAMPLE_GAP_QUESTION, &sample_gap_context()).await;
}

const AUTH: &str = r#"use std::collections::HashMap;

/// Logs a user in and returns a session token.
pub fn login(name: &str, password: &str) -> Option<String> {
    let user = verify_user(name, password)?;
    audit_login(&user);
    let mut claims = HashMap::new();
    claims.insert("sub", user);
    Some(issue_token(&claims))
}
"#;

const USERS: &str = r#"/// Looks a user up.
pub fn verify_user(name: &str, password: &str) -> Option<String> {
    (name == password).then(|| name.to_owned())
}
"#;

const TOKENS: &str = r#"/// Signs the claims into a token.
pub fn issue_token(claims: &std::collections::HashMap<&str, String>) -> String {
    format!("token-{}", claims.len())
}
"#;

#[tokio::test]
async fn the_symbol_graph_code_detector_passes_the_suite() {
    let keywords = Arc::new(InMemoryKeywordIndex::default());
    let symbols = Arc::new(InMemorySymbolIndex::default());
    let engine = Engine::new(
        Arc::new(HashEmbedder::new(64)),
        Arc::new(InMemoryVectorIndex::new(64)),
        keywords.clone(),
        EngineConfig::default(),
    )
    .unwrap()
    .with_symbols(symbols.clone());
    let docs = [
        ("src/auth.rs", AUTH),
        ("src/users.rs", USERS),
        ("src/tokens.rs", TOKENS),
    ]
    .into_iter()
    .map(|(path, text)| {
        Document::new(
            DocumentId::new(path).unwrap(),
            path,
            path,
            text,
            ChunkKind::Code,
        )
        .unwrap()
    })
    .collect();
    engine
        .ingest(docs, Vec::new(), &Scope::None, &NoProgress)
        .await
        .unwrap();
    // The context: login's chunk, which calls two functions defined elsewhere in the corpus.
    let auth = keywords
        .document_chunks(&DocumentId::new("src/auth.rs").unwrap())
        .await
        .unwrap();
    let context: Vec<ContextItem> = auth
        .iter()
        .filter(|c| c.text.contains("fn login"))
        .map(|c| ContextItem {
            id: c.id.as_str().to_owned(),
            source: c.source.clone(),
            text: c.text.clone(),
        })
        .collect();
    assert_eq!(context.len(), 1, "{auth:?}");
    let detector = CodeGapDetector::with_symbols(symbols.clone() as Arc<dyn SymbolIndex>);
    let question = "How does login check the user and make the token?";
    gap_detector_suite(&detector, question, &context).await;
    // The graph was read, not the text: `audit_login` is defined nowhere in the corpus, so
    // it is external, not a gap (the lexical reading cannot tell and names it a gap).
    let report = detector.detect(question, &context, &[]).await.unwrap();
    assert_eq!(report.external, ["audit_login"], "{report:?}");
    assert_eq!(report.gaps, ["verify_user", "issue_token"], "{report:?}");
    let lexical = CodeGapDetector::lexical()
        .detect(question, &context, &[])
        .await
        .unwrap();
    assert!(
        lexical.gaps.iter().any(|g| g == "audit_login"),
        "{lexical:?}"
    );
}

/// An LLM detector over a model that replies `reply` to each of the suite's four calls.
fn llm(reply: &str, json: bool) -> LlmGapDetector {
    let model = Arc::new(ScriptedLanguageModel::new(std::iter::repeat_n(
        Ok(reply.to_owned()),
        4,
    )));
    LlmGapDetector::new(model, 512, json)
}

#[tokio::test]
async fn the_llm_detector_passes_the_suite_in_sections() {
    let detector = llm(
        "ANSWER:\nIt opens the session store and sweeps expired sessions [1].\n\n\
         MISSING:\n- SessionStore::open in src/store.rs\n- sweep_expired",
        false,
    );
    gap_detector_suite(&detector, SAMPLE_GAP_QUESTION, &sample_gap_context()).await;
}

#[tokio::test]
async fn the_llm_detector_passes_the_suite_in_json() {
    let detector = llm(
        r#"{"answer": "It opens the session store, then sweeps expired sessions.",
            "is_sufficient": false,
            "missing": ["SessionStore::open in src/store.rs", "sweep_expired"],
            "useful_chunk_ids": ["src/service.rs#0"]}"#,
        true,
    );
    gap_detector_suite(&detector, SAMPLE_GAP_QUESTION, &sample_gap_context()).await;
}
