//! `OpenAiChat` against a fake OpenAI-compatible server.

use std::time::Duration;

use crag_llm::{OpenAiChat, OpenAiChatConfig};
use crag_ports::{ChatMessage, CompletionRequest, ErrorKind, LanguageModel, Role};
use serde_json::json;
use url::Url;

use crate::support::{closed_port_url, hang_up_url, FakeServer, HangUp, Reply};

fn config(base_url: Url) -> OpenAiChatConfig {
    OpenAiChatConfig {
        timeout: Duration::from_secs(5),
        max_retries: 3,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        ..OpenAiChatConfig::new(base_url, "test-model")
    }
}

fn request() -> CompletionRequest {
    CompletionRequest {
        messages: vec![
            ChatMessage::system("Answer briefly."),
            ChatMessage::user("Capital of France?"),
            ChatMessage {
                role: Role::Assistant,
                content: "Paris.".into(),
            },
            ChatMessage::user("And of Italy?"),
        ],
        max_tokens: 64,
        temperature: 0.2,
    }
}

fn completion(content: &str) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 20, "completion_tokens": 2, "total_tokens": 22}
        }),
    )
}

fn overloaded() -> Reply {
    Reply::json(503, json!({"error": {"message": "server overloaded"}}))
}

#[tokio::test]
async fn happy_path_sends_the_openai_body() {
    let server = FakeServer::start(|_, _| completion("Rome.")).await;
    let chat = OpenAiChat::new(OpenAiChatConfig {
        api_key: Some("sk-test".into()),
        ..config(server.url("/v1"))
    })
    .expect("chat");
    assert_eq!(chat.model_id(), "test-model");

    let reply = chat.complete(&request()).await.expect("completion");
    assert_eq!(reply, "Rome.");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization").as_deref(), Some("Bearer sk-test"));
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(r.body["model"], "test-model");
    assert_eq!(r.body["max_tokens"], 64);
    assert_eq!(r.body["stream"], false);
    let temperature = r.body["temperature"].as_f64().expect("temperature");
    assert!((temperature - 0.2).abs() < 1e-6, "{temperature}");
    let messages = r.body["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().expect("role"))
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(messages[1]["content"], "Capital of France?");
}

#[tokio::test]
async fn no_authorization_header_without_a_key() {
    let server = FakeServer::start(|_, _| completion("ok")).await;
    let chat = OpenAiChat::new(config(server.url("/v1"))).expect("chat");
    chat.complete(&request()).await.expect("completion");
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn base_url_with_and_without_trailing_slash() {
    let server = FakeServer::start(|_, r| {
        if r.path == "/v1/chat/completions" {
            completion("ok")
        } else {
            Reply::text(404, "no such route")
        }
    })
    .await;
    for base in ["/v1", "/v1/"] {
        let chat = OpenAiChat::new(config(server.url(base))).expect("chat");
        assert_eq!(chat.endpoint().path(), "/v1/chat/completions");
        let reply = chat.complete(&request()).await.expect(base);
        assert_eq!(reply, "ok");
    }
    assert!(server
        .requests()
        .iter()
        .all(|r| r.path == "/v1/chat/completions"));
}

#[tokio::test]
async fn retries_503_then_succeeds() {
    let server = FakeServer::start(|n, _| {
        if n < 2 {
            overloaded()
        } else {
            completion("ok")
        }
    })
    .await;
    let chat = OpenAiChat::new(config(server.url("/v1"))).expect("chat");
    assert_eq!(chat.complete(&request()).await.expect("completion"), "ok");
    assert_eq!(server.calls(), 3);
}

#[tokio::test]
async fn honours_retry_after_zero_on_429() {
    let server = FakeServer::start(|n, _| {
        if n == 0 {
            Reply::json(429, json!({"error": {"message": "rate limited"}}))
                .with_header("retry-after", "0")
        } else {
            completion("ok")
        }
    })
    .await;
    // The exponential backoff alone would wait 60 s: only Retry-After makes this quick.
    let chat = OpenAiChat::new(OpenAiChatConfig {
        initial_backoff: Duration::from_secs(60),
        max_backoff: Duration::from_secs(60),
        ..config(server.url("/v1"))
    })
    .expect("chat");
    let reply = tokio::time::timeout(Duration::from_secs(20), chat.complete(&request()))
        .await
        .expect("retry-after 0 must not wait for the backoff")
        .expect("completion");
    assert_eq!(reply, "ok");
    assert_eq!(server.calls(), 2);
}

#[tokio::test]
async fn caps_retry_after_at_max_backoff() {
    let server = FakeServer::start(|n, _| {
        if n == 0 {
            Reply::text(429, "slow down").with_header("retry-after", "3600")
        } else {
            completion("ok")
        }
    })
    .await;
    let chat = OpenAiChat::new(config(server.url("/v1"))).expect("chat");
    let reply = tokio::time::timeout(Duration::from_secs(20), chat.complete(&request()))
        .await
        .expect("retry-after must be capped at max_backoff")
        .expect("completion");
    assert_eq!(reply, "ok");
    assert_eq!(server.calls(), 2);
}

#[tokio::test]
async fn exhausted_retries_are_unavailable() {
    let server = FakeServer::start(|_, _| overloaded()).await;
    let chat = OpenAiChat::new(OpenAiChatConfig {
        max_retries: 2,
        ..config(server.url("/v1"))
    })
    .expect("chat");
    let err = chat.complete(&request()).await.expect_err("always 503");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    let message = err.to_string();
    assert!(message.contains("503"), "{message}");
    assert!(message.contains("server overloaded"), "{message}");
    assert!(message.contains("after 3 attempts"), "{message}");
    assert_eq!(server.calls(), 3);
}

#[tokio::test]
async fn bad_request_is_not_retried() {
    let server = FakeServer::start(|_, _| {
        Reply::json(
            400,
            json!({"error": {"message": "maximum context length is 4096 tokens", "type": "BadRequestError"}}),
        )
    })
    .await;
    let chat = OpenAiChat::new(config(server.url("/v1"))).expect("chat");
    let err = chat.complete(&request()).await.expect_err("400");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(
        err.to_string()
            .contains("maximum context length is 4096 tokens"),
        "{err}"
    );
    assert_eq!(server.calls(), 1);
}

#[tokio::test]
async fn unauthorized_and_not_found_are_unavailable_without_retry() {
    for status in [401, 404] {
        let server = FakeServer::start(move |_, _| {
            Reply::json(status, json!({"error": {"message": "nope"}}))
        })
        .await;
        let chat = OpenAiChat::new(OpenAiChatConfig {
            api_key: Some("sk-wrong".into()),
            ..config(server.url("/v1"))
        })
        .expect("chat");
        let err = chat.complete(&request()).await.expect_err("error status");
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{status}");
        assert!(!err.to_string().contains("sk-wrong"), "{err}");
        assert_eq!(server.calls(), 1, "{status}");
    }
}

#[tokio::test]
async fn slow_server_times_out_after_retries() {
    let server = FakeServer::start(|_, _| completion("late").after(Duration::from_secs(3))).await;
    let chat = OpenAiChat::new(OpenAiChatConfig {
        timeout: Duration::from_millis(150),
        max_retries: 1,
        ..config(server.url("/v1"))
    })
    .expect("chat");
    let err = chat.complete(&request()).await.expect_err("timeout");
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!(server.calls(), 2);
}

#[tokio::test]
async fn malformed_json_is_internal_and_not_retried() {
    let server = FakeServer::start(|_, _| Reply::text(200, "{\"choices\": [")).await;
    let chat = OpenAiChat::new(config(server.url("/v1"))).expect("chat");
    let err = chat.complete(&request()).await.expect_err("malformed");
    assert_eq!(err.kind(), ErrorKind::Internal);
    assert_eq!(server.calls(), 1);
}

#[tokio::test]
async fn missing_or_empty_content_is_internal() {
    for reply in [
        completion(""),
        Reply::json(200, json!({"choices": []})),
        Reply::json(
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": null}}]}),
        ),
    ] {
        let server = FakeServer::start(move |_, _| reply.clone()).await;
        let chat = OpenAiChat::new(config(server.url("/v1"))).expect("chat");
        let err = chat.complete(&request()).await.expect_err("no content");
        assert_eq!(err.kind(), ErrorKind::Internal, "{err}");
        assert_eq!(server.calls(), 1);
    }
}

#[tokio::test]
async fn refused_connection_is_unavailable() {
    let chat = OpenAiChat::new(config(closed_port_url("/v1").await)).expect("chat");
    let err = chat
        .complete(&request())
        .await
        .expect_err("nothing listens");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("after 4 attempts"), "{err}");
}

#[tokio::test]
async fn connections_closed_without_or_mid_answer_are_unavailable_after_retries() {
    for how in [HangUp::Silent, HangUp::MidBody] {
        let chat = OpenAiChat::new(config(hang_up_url("/v1", how))).expect("chat");
        let err = chat
            .complete(&request())
            .await
            .expect_err("the server hangs up");
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{how:?}: {err}");
        assert!(
            err.to_string().contains("after 4 attempts"),
            "{how:?}: {err}"
        );
    }
}

#[tokio::test]
async fn invalid_request_sends_nothing() {
    let server = FakeServer::start(|_, _| completion("ok")).await;
    let chat = OpenAiChat::new(config(server.url("/v1"))).expect("chat");
    let empty = CompletionRequest {
        messages: Vec::new(),
        ..request()
    };
    let err = chat.complete(&empty).await.expect_err("no messages");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(server.calls(), 0);
}

#[test]
fn api_key_from_unset_env_keeps_the_key() {
    let base = Url::parse("http://localhost:8000/v1").expect("url");
    let config = OpenAiChatConfig::new(base.clone(), "m")
        .api_key_from_env("CRAG_LLM_TEST_VARIABLE_THAT_IS_NEVER_SET");
    assert_eq!(config.api_key, None);
    let config = OpenAiChatConfig {
        api_key: Some("explicit".into()),
        ..OpenAiChatConfig::new(base, "m")
    }
    .api_key_from_env("CRAG_LLM_TEST_VARIABLE_THAT_IS_NEVER_SET");
    assert_eq!(config.api_key.as_deref(), Some("explicit"));
}

#[tokio::test]
async fn passes_the_language_model_suite() {
    let server = FakeServer::start(|_, _| completion("Blue.")).await;
    let chat = OpenAiChat::new(config(server.url("/v1"))).expect("chat");
    crag_ports::testsuite::language_model_suite(&chat).await;
    assert_eq!(
        server.requests().len(),
        1,
        "invalid requests are refused before sending"
    );
}
