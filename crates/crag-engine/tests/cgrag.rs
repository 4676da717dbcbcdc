//! CGRAG over the in-memory fakes: every way the loop stops, with a scripted model and with
//! the LLM-free detector, and sessions (cache, not-found set, turns).

use std::sync::Arc;

use crag_core::{ChunkKind, Document, DocumentId, Query, SessionId, TopK};
use crag_engine::{
    ArtifactOrigin, AskRequest, CgragComponents, CgragConfig, ChunkingConfig, CodeGapDetector,
    Engine, EngineConfig, EngineError, HistoryConfig, LlmGapDetector, NoProgress, Scope,
    SourcesConfig, StopReason,
};
use crag_ports::fakes::{
    HashEmbedder, InMemoryKeywordIndex, InMemorySessionStore, InMemoryVectorIndex,
    ScriptedLanguageModel,
};
use crag_ports::{ErrorKind, GapDetector, SessionStore};

const CODE: &[(&str, &str)] = &[
    (
        "src/auth.py",
        "def login(request):\n    user = verify_user(request.name, request.password)\n    return issue_token(user)\n",
    ),
    (
        "src/users.py",
        "def verify_user(name, password):\n    record = lookup(name)\n    return check_hash(record, password)\n",
    ),
    (
        "src/tokens.py",
        "def issue_token(user):\n    return sign({'sub': user.id})\n",
    ),
    (
        "docs/intro.md",
        "The service logs users in: a login request is checked and answered with a token.",
    ),
];

async fn engine() -> Engine {
    let engine = Engine::new(
        Arc::new(HashEmbedder::new(64)),
        Arc::new(InMemoryVectorIndex::new(64)),
        Arc::new(InMemoryKeywordIndex::default()),
        EngineConfig {
            chunking: ChunkingConfig {
                chunk_tokens: 64,
                overlap_tokens: 8,
            },
            ..EngineConfig::default()
        },
    )
    .unwrap();
    let docs = CODE
        .iter()
        .map(|(path, text)| {
            let kind = if path.ends_with(".py") {
                ChunkKind::Code
            } else {
                ChunkKind::Prose
            };
            Document::new(DocumentId::new(*path).unwrap(), *path, *path, *text, kind).unwrap()
        })
        .collect();
    engine
        .ingest(docs, Vec::new(), &Scope::None, &NoProgress)
        .await
        .unwrap();
    engine
}

fn scripted(replies: &[&str]) -> Arc<ScriptedLanguageModel> {
    Arc::new(ScriptedLanguageModel::new(
        replies.iter().map(|r| Ok((*r).to_owned())),
    ))
}

async fn engine_with(
    detector: Arc<dyn GapDetector>,
    sessions: Option<Arc<dyn SessionStore>>,
) -> Engine {
    engine_configured(detector, sessions, SourcesConfig::default()).await
}

/// Three chunks of context, from these sources.
async fn engine_configured(
    detector: Arc<dyn GapDetector>,
    sessions: Option<Arc<dyn SessionStore>>,
    sources: SourcesConfig,
) -> Engine {
    engine()
        .await
        .with_cgrag(CgragComponents {
            detector,
            sessions,
            config: CgragConfig {
                context_chunks: 3,
                sources,
                ..CgragConfig::default()
            },
        })
        .unwrap()
}

fn ask(question: &str) -> AskRequest {
    AskRequest {
        use_crag: false,
        ..AskRequest::new(Query::new(question).unwrap(), TopK::new(2).unwrap())
    }
}

#[tokio::test]
async fn no_gaps_stops_after_one_pass_with_a_cited_answer() {
    let model =
        scripted(&["ANSWER:\nlogin checks the user [1] and signs a token [7].\n\nMISSING:\nNONE"]);
    let e = engine_with(
        Arc::new(LlmGapDetector::new(model.clone(), 200, false)),
        None,
    )
    .await;
    let o = e.ask(&ask("how does login work")).await.unwrap();
    assert_eq!(o.stop, StopReason::NoGaps);
    assert_eq!(o.passes_used(), 1);
    assert_eq!(
        o.answer.as_deref(),
        Some("login checks the user [1] and signs a token."),
        "the citation pointing nowhere is removed"
    );
    assert_eq!(o.citations_removed, 1);
    assert_eq!(o.gaps_identified, 0);
    assert!(o.detector.starts_with("llm:"));
    assert!(o.session_id.is_none(), "ephemeral");
    let prompt = &model.requests()[0].messages[1].content;
    assert!(prompt.contains("how does login work"), "{prompt}");
    assert!(prompt.contains("MISSING"), "{prompt}");
}

#[tokio::test]
async fn a_gap_is_fetched_by_symbol_then_the_loop_ends() {
    let model = scripted(&[
        "ANSWER: login calls verify_user.\nMISSING:\n- verify_user in users.py",
        "ANSWER: verify_user looks the user up and checks the hash [1].\nMISSING: NONE",
    ]);
    let e = engine_with(
        Arc::new(LlmGapDetector::new(model.clone(), 200, false)),
        None,
    )
    .await;
    let o = e.ask(&ask("what does login do")).await.unwrap();
    assert_eq!(o.stop, StopReason::NoGaps);
    assert_eq!(o.passes_used(), 2);
    assert_eq!(
        (o.gaps_identified, o.gaps_resolved, o.gaps_unresolved),
        (1, 1, 0)
    );
    let fetched = &o.passes[1].retrieved[0];
    assert_eq!(fetched.lookup, "symbol_in_path");
    assert!(fetched.chunk_ids[0].contains("users.py"), "{fetched:?}");
    assert_eq!(
        o.artifacts[0].origin,
        ArtifactOrigin::Index,
        "the best chunk of the question stays first"
    );
    let found = o.artifacts.last().unwrap();
    assert_eq!(
        found.origin,
        ArtifactOrigin::Gap,
        "the fetched context after pass 1's"
    );
    assert!(found.chunk.text.contains("def verify_user"));
    // The second prompt holds the definition, and starts as the first did (pass 1's context
    // in the same order), so a model server can reuse the first prompt's prefix.
    let requests = model.requests();
    let (first, second) = (
        &requests[0].messages[1].content,
        &requests[1].messages[1].content,
    );
    assert!(second.contains("def verify_user"));
    let context = &first[..first.find("\n## Question").unwrap()];
    assert!(second.starts_with(context), "{first}\n---\n{second}");
}

#[tokio::test]
async fn gaps_that_do_not_exist_stop_the_loop() {
    let model = scripted(&[
        "ANSWER: unclear\nMISSING:\n- `ghost_function`",
        "ANSWER: still unclear\nMISSING:\n- ghost_function",
    ]);
    let e = engine_with(Arc::new(LlmGapDetector::new(model, 200, false)), None).await;
    let o = e.ask(&ask("what does login do")).await.unwrap();
    assert_eq!(o.stop, StopReason::AllNotFound);
    assert_eq!(o.passes_used(), 2);
    assert!(
        o.passes[1].retrieved[0].chunk_ids.is_empty(),
        "nothing found"
    );
    assert_eq!(o.passes[1].skipped, vec!["ghost_function".to_owned()]);
    assert_eq!(o.gaps_resolved, 0);
    assert!(o.gaps_unresolved >= 1);
}

#[tokio::test]
async fn three_passes_at_most() {
    let model = scripted(&[
        "ANSWER: a\nMISSING:\n- verify_user",
        "ANSWER: b\nMISSING:\n- issue_token",
        "ANSWER: c\nMISSING:\n- check_hash",
        "ANSWER: never asked",
    ]);
    let e = engine_with(
        Arc::new(LlmGapDetector::new(model.clone(), 200, false)),
        None,
    )
    .await;
    let o = e.ask(&ask("explain the login flow")).await.unwrap();
    assert_eq!(o.stop, StopReason::MaxPasses);
    assert_eq!(o.passes_used(), 3);
    assert_eq!(model.requests().len(), 3, "no fourth call");
    assert_eq!(o.answer.as_deref(), Some("c"));
    assert_eq!(o.gaps_identified, 3);
}

#[tokio::test]
async fn a_failing_model_fails_open_with_the_context() {
    let model = Arc::new(ScriptedLanguageModel::new([Err((
        ErrorKind::Unavailable,
        "server returned 503".to_owned(),
    ))]));
    let e = engine_with(Arc::new(LlmGapDetector::new(model, 200, false)), None).await;
    let o = e.ask(&ask("what does login do")).await.unwrap();
    assert_eq!(o.stop, StopReason::DetectorFailed);
    assert!(o.answer.is_none());
    assert!(!o.artifacts.is_empty(), "the retrieval is still returned");
    assert!(o.warnings[0].contains("503"), "{:?}", o.warnings);
}

#[tokio::test]
async fn unparseable_replies_count_as_no_gaps() {
    let model = scripted(&["1. The context shows login.\n2. The context shows tokens."]);
    let e = engine_with(Arc::new(LlmGapDetector::new(model, 200, false)), None).await;
    let o = e.ask(&ask("what does login do")).await.unwrap();
    assert_eq!(o.stop, StopReason::NoGaps);
    assert_eq!(o.passes_used(), 1);
}

#[tokio::test]
async fn without_a_model_the_loop_runs_llm_free() {
    let e = engine_with(Arc::new(CodeGapDetector::lexical()), None).await;
    let o = e.ask(&ask("def login request verify_user")).await.unwrap();
    assert!(o.answer.is_none(), "no model, no answer");
    assert_eq!(o.detector, "code");
    assert!(o.gaps_identified >= 1, "{:?}", o.passes);
    assert!(o.passes.len() >= 2, "{:?}", o.passes);
    assert!(
        o.artifacts
            .iter()
            .any(|a| a.chunk.text.contains("def issue_token")
                || a.chunk.text.contains("def verify_user")),
        "a called function's definition was fetched: {:?}",
        o.passes
    );
}

#[tokio::test]
async fn sessions_cache_context_and_remember_what_does_not_exist() {
    let store: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::default());
    let model = scripted(&[
        "ANSWER: first\nMISSING:\n- `ghost_function`",
        "ANSWER: first, again\nMISSING: NONE",
        "ANSWER: second\nMISSING:\n- ghost_function",
    ]);
    let e = engine_with(
        Arc::new(LlmGapDetector::new(model.clone(), 200, false)),
        Some(Arc::clone(&store)),
    )
    .await;
    let id = SessionId::from_bits(42);
    let first = e
        .ask(&AskRequest {
            session: Some(id),
            ..ask("what does login do")
        })
        .await
        .unwrap();
    assert_eq!(first.session_id, Some(id));
    assert_eq!(first.context_from_cache, 0);
    let saved = store.load(id).await.unwrap().unwrap();
    assert_eq!(saved.not_found, vec!["ghost_function".to_owned()]);
    assert_eq!(saved.turns.len(), 1);
    assert_eq!(saved.turns[0].answer.as_deref(), Some("first, again"));

    // The follow-up starts from the cache and does not look for the ghost again.
    let second = e
        .ask(&AskRequest {
            session: Some(id),
            ..ask("and the token")
        })
        .await
        .unwrap();
    assert!(second.context_from_cache > 0, "{:?}", second.artifacts);
    // Its prompt starts with the chunk the last prompt started with.
    let block = format!(
        "## Available Context\n\n[1] (id: {})\n{}",
        first.artifacts[0].chunk.id.as_str(),
        first.artifacts[0].chunk.text.trim_end()
    );
    assert!(model.requests()[2].messages[1].content.starts_with(&block));
    assert_eq!(second.stop, StopReason::AllNotFound);
    assert_eq!(second.passes_used(), 1);
    assert_eq!(store.load(id).await.unwrap().unwrap().turns.len(), 2);
}

#[tokio::test]
async fn a_follow_up_starts_from_the_cached_context_and_needs_fewer_passes() {
    let store: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::default());
    let e = engine_with(Arc::new(CodeGapDetector::lexical()), Some(store)).await;
    let id = SessionId::from_bits(7);
    let in_session = |question: &str| AskRequest {
        session: Some(id),
        ..ask(question)
    };
    let first = e
        .ask(&in_session("def login request verify_user"))
        .await
        .unwrap();
    assert!(first.passes_used() >= 2, "{:?}", first.passes);

    // The follow-up's first context is the cache (the definitions the gap passes fetched), so
    // the callees are defined before any gap pass; the same question without the session
    // fetches them again.
    let follow = e.ask(&in_session("login request")).await.unwrap();
    let control = e.ask(&ask("login request")).await.unwrap();
    assert!(follow.context_from_cache >= 2, "{:?}", follow.artifacts);
    assert_eq!(follow.artifacts[0].origin, ArtifactOrigin::Session);
    assert!(
        follow.passes_used() < control.passes_used(),
        "follow-up {:?}, control {:?}",
        follow.passes,
        control.passes
    );
}

#[tokio::test]
async fn a_session_id_needs_a_session_store() {
    let e = engine_with(Arc::new(CodeGapDetector::lexical()), None).await;
    let err = e
        .ask(&AskRequest {
            session: Some(SessionId::from_bits(1)),
            ..ask("login")
        })
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::InvalidInput(_)), "{err}");
}

#[tokio::test]
async fn a_follow_up_reads_the_session_turns_as_a_context_source() {
    let store: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::default());
    let model = scripted(&[
        "ANSWER: login checks the user\nMISSING: NONE",
        "ANSWER: it signs a token\nMISSING: NONE",
    ]);
    // The session's cache off: in three chunks it would rank with the retrieval's first two
    // (tested above) and push the turn out.
    let mut sources = SourcesConfig::default();
    sources.session.enabled = false;
    let e = engine_configured(
        Arc::new(LlmGapDetector::new(model, 200, false)),
        Some(Arc::clone(&store)),
        sources,
    )
    .await;
    let id = SessionId::from_bits(7);
    let first = e
        .ask(&AskRequest {
            session: Some(id),
            ..ask("what does login do")
        })
        .await
        .unwrap();
    assert!(
        first
            .artifacts
            .iter()
            .all(|a| a.origin != ArtifactOrigin::History),
        "a new session has no turns"
    );
    let second = e
        .ask(&AskRequest {
            session: Some(id),
            ..ask("and what does it return")
        })
        .await
        .unwrap();
    // Weight 0.5: the last turn counts as a second-ranked result, so it is in the 3 chunks.
    let turn = second
        .artifacts
        .iter()
        .find(|a| a.origin == ArtifactOrigin::History)
        .expect("the previous turn is context");
    assert_eq!(
        turn.chunk.text,
        "User: what does login do\nAssistant: login checks the user"
    );
    let saved = store.load(id).await.unwrap().unwrap();
    assert_eq!(saved.turns.len(), 2);
    assert!(
        saved
            .nodes
            .iter()
            .all(|n| !n.chunk_id.starts_with("chat-history")),
        "turns are kept as turns, not as cached context"
    );

    // The source switched off: no turn in the context.
    let model = scripted(&["ANSWER: again\nMISSING: NONE"]);
    let off = engine_configured(
        Arc::new(LlmGapDetector::new(model, 200, false)),
        Some(Arc::clone(&store)),
        SourcesConfig {
            history: HistoryConfig {
                enabled: false,
                ..HistoryConfig::default()
            },
            ..SourcesConfig::default()
        },
    )
    .await;
    let third = off
        .ask(&AskRequest {
            session: Some(id),
            ..ask("and what does it return")
        })
        .await
        .unwrap();
    assert!(third
        .artifacts
        .iter()
        .all(|a| a.origin != ArtifactOrigin::History));
}
