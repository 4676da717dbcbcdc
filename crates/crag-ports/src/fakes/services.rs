//! Fakes of the service ports: evaluator, web search, language model, reranker.

use super::*;

/// What a scripted evaluator answers for a query and its documents.
pub type EvaluateFn = dyn Fn(&crag_core::Query, &[crag_core::EvalDocument]) -> PortResult<crag_core::Evaluation>
    + Send
    + Sync;

/// Relevance evaluator answering with a closure; counts its calls.
pub struct FnEvaluator {
    name: String,
    f: Box<EvaluateFn>,
    calls: AtomicUsize,
}

impl std::fmt::Debug for FnEvaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnEvaluator")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl FnEvaluator {
    /// An evaluator named `name` answering with `f`.
    pub fn new(
        name: impl Into<String>,
        f: impl Fn(&crag_core::Query, &[crag_core::EvalDocument]) -> PortResult<crag_core::Evaluation>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            f: Box::new(f),
            calls: AtomicUsize::new(0),
        }
    }

    /// How many evaluations were asked.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl crate::RelevanceEvaluator for FnEvaluator {
    fn name(&self) -> &str {
        &self.name
    }

    async fn evaluate(
        &self,
        query: &crag_core::Query,
        documents: &[crag_core::EvalDocument],
    ) -> PortResult<crag_core::Evaluation> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        (self.f)(query, documents)
    }
}

/// Web search answering every query with the same results, or the same failure.
#[derive(Debug)]
pub struct StaticWebSearch {
    answer: Result<Vec<crate::WebResult>, (crate::ErrorKind, String)>,
    queries: Mutex<Vec<String>>,
}

impl StaticWebSearch {
    /// Answers with `results` (cut to the asked limit).
    pub fn new(results: Vec<crate::WebResult>) -> Self {
        Self {
            answer: Ok(results),
            queries: Mutex::new(Vec::new()),
        }
    }

    /// Fails every search with an error of `kind`.
    pub fn failing(kind: crate::ErrorKind, message: impl Into<String>) -> Self {
        Self {
            answer: Err((kind, message.into())),
            queries: Mutex::new(Vec::new()),
        }
    }

    /// Queries searched so far.
    pub fn queries(&self) -> Vec<String> {
        lock(&self.queries).clone()
    }
}

#[async_trait]
impl crate::WebSearch for StaticWebSearch {
    fn name(&self) -> &str {
        "static"
    }

    async fn search(&self, query: &str, limit: usize) -> PortResult<Vec<crate::WebResult>> {
        if query.trim().is_empty() || limit == 0 {
            return Err(PortError::invalid_input(
                "a web search needs a query and a positive limit",
            ));
        }
        lock(&self.queries).push(query.to_owned());
        match &self.answer {
            Ok(results) => Ok(results.iter().take(limit).cloned().collect()),
            Err((kind, message)) => Err(PortError::new(*kind, message.clone())),
        }
    }
}

/// Language model replying from a script, in order; records the requests.
#[derive(Debug, Default)]
pub struct ScriptedLanguageModel {
    replies: Mutex<std::collections::VecDeque<Result<String, (crate::ErrorKind, String)>>>,
    requests: Mutex<Vec<crate::CompletionRequest>>,
}

impl ScriptedLanguageModel {
    /// A model that will give `replies` in order, then fail with `Unavailable`.
    pub fn new(
        replies: impl IntoIterator<Item = Result<String, (crate::ErrorKind, String)>>,
    ) -> Self {
        Self {
            replies: Mutex::new(replies.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<crate::CompletionRequest> {
        lock(&self.requests).clone()
    }
}

#[async_trait]
impl crate::LanguageModel for ScriptedLanguageModel {
    fn model_id(&self) -> &str {
        "scripted"
    }

    async fn complete(&self, request: &crate::CompletionRequest) -> PortResult<String> {
        request.validate()?;
        lock(&self.requests).push(request.clone());
        match lock(&self.replies).pop_front() {
            Some(Ok(text)) => Ok(text),
            Some(Err((kind, message))) => Err(PortError::new(kind, message)),
            None => Err(PortError::new(
                crate::ErrorKind::Unavailable,
                "the script has no more replies",
            )),
        }
    }
}

/// Reranker scoring a passage by the share of the query's distinct words it contains.
///
/// The logit runs from -4 (no query word) to 4 (every query word). Counts the passages scored.
#[derive(Debug, Default)]
pub struct TermOverlapReranker {
    passages_scored: AtomicUsize,
}

impl TermOverlapReranker {
    /// Returns how many passages were scored so far.
    pub fn passages_scored(&self) -> usize {
        self.passages_scored.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl crate::Reranker for TermOverlapReranker {
    fn model_id(&self) -> &str {
        "term-overlap"
    }

    async fn rerank(
        &self,
        query: &str,
        passages: &[String],
    ) -> PortResult<Vec<crate::RerankScore>> {
        if query.trim().is_empty() {
            return Err(PortError::invalid_input("query is empty"));
        }
        let terms: std::collections::BTreeSet<String> = words(query).map(|(_, w)| w).collect();
        self.passages_scored
            .fetch_add(passages.len(), Ordering::Relaxed);
        Ok(passages
            .iter()
            .map(|passage| {
                let present: std::collections::BTreeSet<String> = words(passage)
                    .map(|(_, w)| w)
                    .filter(|w| terms.contains(w))
                    .collect();
                let share = present.len() as f32 / terms.len().max(1) as f32;
                crate::RerankScore::from_logit(8.0 * share - 4.0)
            })
            .collect())
    }
}
