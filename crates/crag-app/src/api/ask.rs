//! The CGRAG use cases: ask, and the sessions behind it.

use crag_core::{Session, SessionId, SessionSummary};
use crag_engine::{AskOutcome, AskRequest, PassReport};

use super::Api;
use crate::error::{AppError, Code};
use crate::requests::{Invalid, QueryParams};

/// Sessions listed at most.
pub const MAX_SESSIONS_LISTED: usize = 1000;

/// A question as a caller sent it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AskParams {
    /// The question and retrieval settings (`session_id`: the session to continue, 32 hex
    /// digits; an unknown id starts that session).
    pub query: QueryParams,
    /// Start a new session with an id the server draws (ignored when `session_id` is set).
    pub new_session: bool,
}

/// What a streamed ask sends ([`Api::ask_streamed`]): each pass as it ends, then the answer or
/// the error that ended it.
#[derive(Debug)]
pub enum AskEvent {
    /// A pass ended.
    Pass(PassReport),
    /// The ask ended with this outcome (its session saved).
    Answer(Box<AskOutcome>),
    /// The ask failed.
    Failed(AppError),
}

/// Parses a session id as the APIs spell it.
pub fn session_id(raw: &str) -> Result<SessionId, Invalid> {
    raw.trim()
        .parse::<SessionId>()
        .map_err(|_| Invalid("sessionId must be 32 hexadecimal digits".into()))
}

impl Api {
    /// Validates and answers a question with CGRAG.
    pub async fn ask(&self, params: &AskParams) -> Result<AskOutcome, AppError> {
        let request = self.ask_request(params)?;
        self.run_ask(&request, &|_| {}).await
    }

    /// Runs a validated question in the background and streams it: a [`AskEvent::Pass`] per
    /// pass, then one [`AskEvent::Answer`] or [`AskEvent::Failed`]. The transports that stream
    /// (HTTP server-sent events, gRPC `AskStream`) only map these events to their wire; a
    /// receiver gone away stops receiving, and the ask still completes and saves its session.
    pub fn ask_streamed(
        self,
        request: AskRequest,
    ) -> tokio::sync::mpsc::UnboundedReceiver<AskEvent> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let passes = tx.clone();
            let observer = move |p: &PassReport| {
                let _ = passes.send(AskEvent::Pass(p.clone()));
            };
            let last = match self.run_ask(&request, &observer).await {
                Ok(outcome) => AskEvent::Answer(Box::new(outcome)),
                Err(e) => AskEvent::Failed(e),
            };
            let _ = tx.send(last);
        });
        rx
    }

    /// Runs a validated question, calling `observer` after each pass.
    pub async fn run_ask(
        &self,
        request: &AskRequest,
        observer: &(dyn Fn(&PassReport) + Send + Sync),
    ) -> Result<AskOutcome, AppError> {
        Ok(self.engine().ask_observed(request, observer).await?)
    }

    /// Checks a question and resolves its session (a new one is drawn when asked for).
    pub fn ask_request(&self, params: &AskParams) -> Result<AskRequest, AppError> {
        let mut query = params.query.clone();
        let session = match query.session_id.take() {
            Some(raw) => Some(session_id(&raw)?),
            None if params.new_session => Some(
                crag_sessions::new_session_id()
                    .map_err(|e| AppError::internal(format!("cannot draw a session id: {e}")))?,
            ),
            None => None,
        };
        if session.is_some() && self.engine().cgrag().sessions.is_none() {
            return Err(AppError::new(
                Code::InvalidArgument,
                crag_engine::SESSIONS_OFF,
            ));
        }
        let checked = self.limits().query_request(&query)?;
        Ok(AskRequest {
            question: checked.query,
            session,
            top_k: checked.top_k,
            use_crag: checked.use_crag,
            use_web_search: checked.use_web_search,
            filter: checked.filter,
        })
    }

    fn store(&self) -> Result<&std::sync::Arc<dyn crag_ports::SessionStore>, AppError> {
        self.engine()
            .cgrag()
            .sessions
            .as_ref()
            .ok_or_else(|| AppError::new(Code::NotFound, crag_engine::SESSIONS_OFF))
    }

    /// Sessions, most recently used first.
    pub async fn sessions(&self, limit: Option<i64>) -> Result<Vec<SessionSummary>, AppError> {
        let limit = match limit {
            None => 100,
            Some(n) if (1..=MAX_SESSIONS_LISTED as i64).contains(&n) => n as usize,
            Some(n) => {
                return Err(AppError::new(
                    Code::InvalidArgument,
                    format!("limit must be between 1 and {MAX_SESSIONS_LISTED}, got {n}"),
                ))
            }
        };
        Ok(self
            .store()?
            .list(limit)
            .await
            .map_err(crag_engine::EngineError::from)?)
    }

    /// One session, whole.
    pub async fn session(&self, raw: &str) -> Result<Session, AppError> {
        let id = session_id(raw)?;
        self.store()?
            .load(id)
            .await
            .map_err(crag_engine::EngineError::from)?
            .ok_or_else(|| AppError::new(Code::NotFound, format!("no session {id}")))
    }

    /// Deletes a session; not found is an error.
    pub async fn delete_session(&self, raw: &str) -> Result<(), AppError> {
        let id = session_id(raw)?;
        if self
            .store()?
            .delete(id)
            .await
            .map_err(crag_engine::EngineError::from)?
        {
            Ok(())
        } else {
            Err(AppError::new(Code::NotFound, format!("no session {id}")))
        }
    }
}
