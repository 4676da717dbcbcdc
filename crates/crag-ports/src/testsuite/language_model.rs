//! The language-model contract.

use crate::{ChatMessage, CompletionRequest, ErrorKind, LanguageModel};

/// A short, valid request.
pub fn sample_completion_request() -> CompletionRequest {
    CompletionRequest {
        messages: vec![
            ChatMessage::system("Answer in one word."),
            ChatMessage::user("What colour is the sky on a clear day?"),
        ],
        max_tokens: 8,
        temperature: 0.0,
    }
}

/// Runs the language-model contract against a model that answers the sample request once
/// (a served model, or a scripted one with one reply): a model id; a reply with text; and
/// requests no model can serve (no messages, zero tokens, a temperature out of range or not
/// a number) refused as invalid input before anything is asked.
pub async fn language_model_suite(model: &dyn LanguageModel) {
    assert!(!model.model_id().trim().is_empty(), "a model has an id");
    let reply = model
        .complete(&sample_completion_request())
        .await
        .expect("a completion");
    assert!(!reply.trim().is_empty(), "a reply has text");
    let invalid = [
        CompletionRequest {
            messages: Vec::new(),
            ..sample_completion_request()
        },
        CompletionRequest {
            max_tokens: 0,
            ..sample_completion_request()
        },
        CompletionRequest {
            temperature: -0.5,
            ..sample_completion_request()
        },
        CompletionRequest {
            temperature: f32::NAN,
            ..sample_completion_request()
        },
        CompletionRequest {
            temperature: crate::MAX_TEMPERATURE + 0.5,
            ..sample_completion_request()
        },
    ];
    for request in &invalid {
        let err = model
            .complete(request)
            .await
            .expect_err("an invalid request is refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{request:?}");
    }
}
