//! Label-free samples for fitting the calibrated evaluator to a corpus: pseudo-queries made
//! from the corpus itself. A document's title (or first sentence) is a query; retrieved as
//! it is, its source document is the relevant one (an answerable sample); retrieved with the
//! source document left out of both legs, the same query has nothing relevant (an
//! unanswerable sample). `crag calibrate --self` fits on them.

use crag_core::{ChunkFilter, Document, Query, TopK};
use crag_judge::LabelledQuery;

use super::outcome::QueryRequest;
use crate::engine::Engine;
use crate::error::Result;

/// Words of a pseudo-query at most.
const MAX_QUERY_WORDS: usize = 24;
/// Words of a title at least, for the title to be the pseudo-query.
const MIN_TITLE_WORDS: usize = 3;

/// The pseudo-query of a document: its title when it has at least 3 words, else its first
/// sentence; cut to 24 words. `None` when neither gives a valid query.
pub fn pseudo_query(document: &Document) -> Option<Query> {
    let title_words = document.title.split_whitespace().count();
    let text = if title_words >= MIN_TITLE_WORDS {
        document.title.as_str()
    } else {
        first_sentence(&document.text)
    };
    let words: Vec<&str> = text.split_whitespace().take(MAX_QUERY_WORDS).collect();
    if words.len() < MIN_TITLE_WORDS {
        return None;
    }
    Query::new(words.join(" ")).ok()
}

fn first_sentence(text: &str) -> &str {
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, '.' | '?' | '!') && text[i + 1..].starts_with(|n: char| n.is_whitespace())
        })
        .map_or(text.len(), |(i, _)| i + 1);
    &text[..end]
}

/// Picks `count` of `len` indices, seeded (SplitMix64, a partial Fisher-Yates shuffle).
fn sample_indices(len: usize, count: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut all: Vec<usize> = (0..len).collect();
    let count = count.min(len);
    for i in 0..count {
        let j = i + (next() % (len - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(count);
    all
}

impl Engine {
    /// Two labelled samples per pseudo-query of `count` documents drawn from `documents`
    /// (seeded): the query retrieved as is (its source document relevant) and retrieved with
    /// the source document left out (nothing relevant). Both are what the evaluator would be
    /// shown for the top `top_k` ([`Engine::evaluation_input`]). Documents without a usable
    /// pseudo-query are skipped.
    pub async fn self_calibration_samples(
        &self,
        documents: &[Document],
        count: usize,
        seed: u64,
        top_k: TopK,
    ) -> Result<Vec<LabelledQuery>> {
        let mut samples = Vec::with_capacity(count * 2);
        for i in sample_indices(documents.len(), count, seed) {
            let source = &documents[i];
            let Some(query) = pseudo_query(source) else {
                continue;
            };
            let request = QueryRequest {
                use_web_search: false,
                use_rerank: false,
                ..QueryRequest::new(query.clone(), top_k)
            };
            let present = self.evaluation_input(&request).await?;
            let absent = self
                .evaluation_input(&QueryRequest {
                    filter: ChunkFilter {
                        exclude_documents: vec![source.id.clone()],
                        ..request.filter.clone()
                    },
                    ..request.clone()
                })
                .await?;
            let relevant = present
                .artifacts
                .iter()
                .map(|a| a.chunk.document_id == source.id)
                .collect();
            samples.push(LabelledQuery {
                id: format!("self:{}", source.id),
                query: query.as_str().to_owned(),
                documents: present.documents,
                relevant,
            });
            samples.push(LabelledQuery {
                id: format!("self-absent:{}", source.id),
                query: query.as_str().to_owned(),
                relevant: vec![false; absent.documents.len()],
                documents: absent.documents,
            });
        }
        Ok(samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crag_core::{ChunkKind, DocumentId};

    fn doc(title: &str, text: &str) -> Document {
        Document::new(
            DocumentId::new("d").unwrap(),
            "d",
            title,
            text,
            ChunkKind::Prose,
        )
        .unwrap()
    }

    #[test]
    fn a_long_title_is_the_query_else_the_first_sentence() {
        let q = pseudo_query(&doc("Vitamin D and bone density", "Text. More.")).unwrap();
        assert_eq!(q.as_str(), "Vitamin D and bone density");
        let q = pseudo_query(&doc("Short", "Calcium needs vitamin D. Dairy helps.")).unwrap();
        assert_eq!(q.as_str(), "Calcium needs vitamin D.");
        let q = pseudo_query(&doc("", "Version 2.5 of the model. Then more.")).unwrap();
        assert_eq!(
            q.as_str(),
            "Version 2.5 of the model.",
            "a decimal point is no end"
        );
        assert!(pseudo_query(&doc("", "Two words")).is_none());
        let long = "word ".repeat(100);
        assert_eq!(
            pseudo_query(&doc("", &long))
                .unwrap()
                .as_str()
                .split(' ')
                .count(),
            MAX_QUERY_WORDS
        );
    }

    #[test]
    fn sampling_is_seeded_distinct_and_bounded() {
        let a = sample_indices(100, 10, 7);
        assert_eq!(a, sample_indices(100, 10, 7));
        assert_ne!(a, sample_indices(100, 10, 8));
        let mut u = a.clone();
        u.sort_unstable();
        u.dedup();
        assert_eq!(u.len(), 10);
        assert!(a.iter().all(|&i| i < 100));
        assert_eq!(sample_indices(3, 10, 1).len(), 3);
        assert!(sample_indices(0, 5, 1).is_empty());
    }
}
