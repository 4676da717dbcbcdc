//! The gap-detector contract.

use std::collections::HashSet;

use crate::{ContextItem, GapDetector, GapReport};

/// The question of [`sample_gap_context`].
pub const SAMPLE_GAP_QUESTION: &str = "How does the service start and keep its sessions fresh?";

/// A context that lacks something: code that calls `SessionStore::open` and `sweep_expired`,
/// defined nowhere in it, and a prose note.
pub fn sample_gap_context() -> Vec<ContextItem> {
    vec![
        ContextItem {
            id: "src/service.rs#0".into(),
            source: "src/service.rs".into(),
            text: "pub fn start(config: &Config) -> Result<()> {\n    let store = \
                   SessionStore::open(&config.path)?;\n    sweep_expired(&store, \
                   config.ttl);\n    serve_forever(store)\n}\n"
                .into(),
        },
        ContextItem {
            id: "docs/service.md#0".into(),
            source: "docs/service.md".into(),
            text: "The service keeps its sessions in a store and sweeps expired ones.".into(),
        },
    ]
}

/// How long a gap may be: the port asks for "a short request".
pub const MAX_GAP_CHARS: usize = 200;

fn key(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_matches('`')
        .to_lowercase()
}

/// What every report must be, whatever it was asked: an answer only from a detector that
/// [`answers`](GapDetector::answers); gaps non-empty, short, distinct and not the question
/// echoed; no gaps when the output could not be read; useful ids among the context's ids,
/// each once; external names apart from the gaps.
fn well_formed(detector: &dyn GapDetector, question: &str, context: &[ContextItem], r: &GapReport) {
    if !detector.answers() {
        assert_eq!(r.answer, None, "a detector that does not answer: {r:?}");
    }
    if let Some(answer) = &r.answer {
        assert!(!answer.trim().is_empty(), "an answer has text: {r:?}");
    }
    if !r.parsed {
        assert!(
            r.gaps.is_empty(),
            "an unreadable output counts as no gaps: {r:?}"
        );
    }
    let mut seen = HashSet::new();
    for gap in &r.gaps {
        assert!(!gap.trim().is_empty(), "an empty gap: {r:?}");
        assert!(
            gap.chars().count() <= MAX_GAP_CHARS,
            "a gap is a short request: {gap:?}"
        );
        assert!(seen.insert(key(gap)), "gap {gap:?} named twice: {r:?}");
        assert_ne!(key(gap), key(question), "the question is no gap: {r:?}");
    }
    let ids: HashSet<&str> = context.iter().map(|c| c.id.as_str()).collect();
    let mut useful = HashSet::new();
    for id in &r.useful_ids {
        assert!(
            ids.contains(id.as_str()),
            "useful id {id:?} is not in the context"
        );
        assert!(useful.insert(id), "useful id {id:?} named twice");
    }
    for name in &r.external {
        assert!(
            !seen.contains(&key(name)),
            "{name:?} is both external and a gap to search for: {r:?}"
        );
    }
}

/// Runs the gap-detector contract. `context` (best first) must lack something any detector
/// names for `question` (code calling what it does not define: [`sample_gap_context`] for a
/// detector that reads any context, indexed chunks for one that reads an index).
///
/// `detect` is called four times: on `context` twice, on `context` with the first gap known
/// missing, and on an empty context (a model-backed detector needs a reply for each). The
/// contract: a name; every report well formed (see `well_formed`); at least one gap for a
/// context that lacks something; the same input read the same way twice; an empty context
/// read without error. A detector that reads no model (`answers()` is false) leaves out the
/// gaps it is told are known missing (compared without regard to case); a model-backed one
/// cannot be held to it (the model may name them again), and the engine skips such gaps as
/// unresolved.
pub async fn gap_detector_suite(
    detector: &dyn GapDetector,
    question: &str,
    context: &[ContextItem],
) {
    assert!(!detector.name().trim().is_empty(), "a detector has a name");
    let first = detector
        .detect(question, context, &[])
        .await
        .expect("detect");
    well_formed(detector, question, context, &first);
    assert!(first.parsed, "the output is read: {first:?}");
    assert!(
        !first.gaps.is_empty(),
        "a context that lacks something has gaps: {first:?}"
    );

    let again = detector
        .detect(question, context, &[])
        .await
        .expect("detect again");
    assert_eq!(again, first, "same input, same report");

    let known = vec![first.gaps[0].clone()];
    let told = detector
        .detect(question, context, &known)
        .await
        .expect("detect with a gap known missing");
    well_formed(detector, question, context, &told);
    if !detector.answers() {
        assert!(
            told.gaps.iter().all(|g| key(g) != key(&known[0])),
            "{:?} is known missing and asked for again: {told:?}",
            known[0]
        );
    }

    let empty = detector
        .detect(question, &[], &[])
        .await
        .expect("an empty context is read, not an error");
    well_formed(detector, question, &[], &empty);
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;

    use super::*;
    use crate::PortResult;

    /// A model-free detector answering `report` whatever it is told.
    #[derive(Debug)]
    struct Fixed(GapReport);

    #[async_trait]
    impl GapDetector for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }
        fn answers(&self) -> bool {
            false
        }
        async fn detect(&self, _: &str, _: &[ContextItem], _: &[String]) -> PortResult<GapReport> {
            Ok(self.0.clone())
        }
    }

    fn gaps(gaps: &[&str]) -> GapReport {
        GapReport {
            gaps: gaps.iter().map(|g| (*g).to_owned()).collect(),
            parsed: true,
            ..GapReport::default()
        }
    }

    #[tokio::test]
    #[should_panic(expected = "is known missing and asked for again")]
    async fn a_known_missing_gap_asked_again_fails() {
        let detector = Fixed(gaps(&["sweep_expired"]));
        gap_detector_suite(&detector, SAMPLE_GAP_QUESTION, &sample_gap_context()).await;
    }

    #[tokio::test]
    #[should_panic(expected = "is not in the context")]
    async fn a_useful_id_outside_the_context_fails() {
        let detector = Fixed(GapReport {
            useful_ids: vec!["elsewhere.rs#0".into()],
            ..gaps(&["sweep_expired"])
        });
        gap_detector_suite(&detector, SAMPLE_GAP_QUESTION, &sample_gap_context()).await;
    }
}
