//! The evaluation service's use case: judge documents a caller retrieved elsewhere.

use crag_engine::{EvaluationReport, JudgedDocument};

use super::Api;
use crate::error::AppError;
use crate::requests::{Invalid, Limits};

/// A document to judge as a caller sent it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvaluateDocumentParams {
    /// Echoed back (default: the document's position, from 0).
    pub id: Option<String>,
    /// Where it came from (default: its id).
    pub source: Option<String>,
    /// What is judged.
    pub text: String,
}

/// An evaluation request: a query and either documents or one context string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvaluateParams {
    /// The query the documents should answer.
    pub query: String,
    /// The documents, best first.
    pub documents: Vec<EvaluateDocumentParams>,
    /// One context string instead of documents, judged as one document.
    pub context: Option<String>,
}

impl Api {
    /// Validates and judges the documents with the configured evaluator (the engine bounds
    /// how many it judges at once).
    pub async fn evaluate(&self, params: &EvaluateParams) -> Result<EvaluationReport, AppError> {
        let limits = self.limits();
        let query = limits.query(&params.query)?;
        let documents = judged_documents(limits, params)?;
        Ok(self.engine().evaluate(&query, &documents).await?)
    }
}

fn judged_documents(limits: &Limits, p: &EvaluateParams) -> Result<Vec<JudgedDocument>, Invalid> {
    let documents: Vec<EvaluateDocumentParams> = match (&p.context, p.documents.is_empty()) {
        (Some(_), false) => {
            return Err(Invalid("give either documents or context, not both".into()))
        }
        (Some(context), true) => vec![EvaluateDocumentParams {
            id: Some("context".into()),
            text: context.clone(),
            ..EvaluateDocumentParams::default()
        }],
        (None, true) => {
            return Err(Invalid(
                "documents (at least one) or context is required".into(),
            ))
        }
        (None, false) => p.documents.clone(),
    };
    documents
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let at = |message: String| Invalid(format!("documents[{i}]: {message}"));
            limits.document_text(&d.text).map_err(|e| at(e.0))?;
            let id = d.id.unwrap_or_else(|| i.to_string());
            let source = d.source.unwrap_or_else(|| id.clone());
            for (name, value) in [("id", &id), ("source", &source)] {
                if value.len() > limits.max_document_id_bytes || value.chars().any(char::is_control)
                {
                    return Err(at(format!(
                        "{name} must be at most {} bytes without control characters",
                        limits.max_document_id_bytes
                    )));
                }
            }
            Ok(JudgedDocument {
                id,
                source,
                text: d.text,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::from(crag_config::LimitsSection::default())
    }

    fn doc(text: &str) -> EvaluateDocumentParams {
        EvaluateDocumentParams {
            text: text.into(),
            ..EvaluateDocumentParams::default()
        }
    }

    #[test]
    fn documents_get_their_position_as_id_and_the_id_as_source() {
        let p = EvaluateParams {
            query: "q".into(),
            documents: vec![
                doc("first"),
                EvaluateDocumentParams {
                    id: Some("b".into()),
                    source: Some("web".into()),
                    text: "second".into(),
                },
            ],
            context: None,
        };
        let docs = judged_documents(&limits(), &p).unwrap();
        assert_eq!((docs[0].id.as_str(), docs[0].source.as_str()), ("0", "0"));
        assert_eq!((docs[1].id.as_str(), docs[1].source.as_str()), ("b", "web"));
    }

    #[test]
    fn a_context_is_one_document_and_excludes_documents() {
        let mut p = EvaluateParams {
            query: "q".into(),
            context: Some("all of it".into()),
            ..EvaluateParams::default()
        };
        let docs = judged_documents(&limits(), &p).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].text, "all of it");
        p.documents.push(doc("x"));
        assert!(judged_documents(&limits(), &p)
            .unwrap_err()
            .0
            .contains("not both"));
    }

    #[test]
    fn nothing_blank_or_too_long_is_judged() {
        let none = EvaluateParams::default();
        assert!(judged_documents(&limits(), &none)
            .unwrap_err()
            .0
            .contains("required"));
        let blank = EvaluateParams {
            documents: vec![doc("ok"), doc("  ")],
            ..EvaluateParams::default()
        };
        let e = judged_documents(&limits(), &blank).unwrap_err().0;
        assert!(e.starts_with("documents[1]: text must not be empty"), "{e}");
        let long = EvaluateParams {
            documents: vec![doc(&"x".repeat(limits().max_document_bytes + 1))],
            ..EvaluateParams::default()
        };
        assert!(judged_documents(&limits(), &long)
            .unwrap_err()
            .0
            .contains("limit"));
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    fn document() -> impl Strategy<Value = EvaluateDocumentParams> {
        (
            proptest::option::of(".{0,40}"),
            proptest::option::of(".{0,40}"),
            ".{0,200}",
        )
            .prop_map(|(id, source, text)| EvaluateDocumentParams { id, source, text })
    }

    proptest! {
        /// Any request either is refused with a message or gives one judged document per
        /// document sent (or one for a context), in order, each with a non-blank text within
        /// the limits and an id and source without control characters.
        #[test]
        fn requests_are_refused_or_judged_whole(
            documents in proptest::collection::vec(document(), 0..8),
            context in proptest::option::of(".{0,200}"),
        ) {
            let limits = Limits::from(crag_config::LimitsSection::default());
            let p = EvaluateParams { query: "q".into(), documents: documents.clone(), context: context.clone() };
            match judged_documents(&limits, &p) {
                Err(e) => prop_assert!(!e.0.is_empty()),
                Ok(judged) => {
                    let expected = if context.is_some() { 1 } else { documents.len() };
                    prop_assert_eq!(judged.len(), expected);
                    for (i, d) in judged.iter().enumerate() {
                        prop_assert!(!d.text.trim().is_empty());
                        prop_assert!(d.text.len() <= limits.max_document_bytes);
                        prop_assert!(!d.id.chars().any(char::is_control));
                        prop_assert!(!d.source.chars().any(char::is_control));
                        if let Some(sent) = documents.get(i).filter(|_| context.is_none()) {
                            prop_assert_eq!(&d.text, &sent.text);
                        }
                    }
                }
            }
        }
    }
}
