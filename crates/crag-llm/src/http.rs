//! HTTP plumbing shared by the adapters: client, URL checks, one JSON POST and its error mapping.

use std::fmt;
use std::time::Duration;

use crag_ports::{ErrorKind, PortError, PortResult};
use reqwest::header::{HeaderValue, RETRY_AFTER};
use reqwest::{Client, StatusCode};
use serde::Serialize;
use url::Url;

use crate::retry::{parse_retry_after, Failure};

/// Largest response body read, in bytes.
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Longest server error message kept in an error, in characters.
const MAX_SERVER_MESSAGE_CHARS: usize = 300;

/// Builds the HTTP client: one timeout per request (connect to last body byte), no redirects.
pub(crate) fn build_client(timeout: Duration) -> PortResult<Client> {
    if timeout.is_zero() {
        return Err(PortError::invalid_input(
            "timeout must be greater than zero",
        ));
    }
    Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("crag-llm/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| PortError::internal("failed to build http client", e.without_url()))
}

/// Rejects URLs that are not absolute `http`/`https` URLs.
pub(crate) fn check_http_url(url: &Url, what: &str) -> PortResult<()> {
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(PortError::invalid_input(format!(
            "{what} must be an http or https url, got `{}`",
            Redacted(url)
        )));
    }
    Ok(())
}

/// Builds the `Authorization: Bearer` header for `api_key`, marked sensitive.
pub(crate) fn bearer_header(api_key: Option<&str>) -> PortResult<Option<HeaderValue>> {
    let Some(key) = api_key else {
        return Ok(None);
    };
    let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
        PortError::invalid_input("api key contains characters not allowed in an http header")
    })?;
    value.set_sensitive(true);
    Ok(Some(value))
}

/// Displays a URL without its password.
pub(crate) struct Redacted<'a>(pub(crate) &'a Url);

impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.password().is_some() {
            let mut url = self.0.clone();
            // Fails only for URLs without a host, which cannot carry a password.
            let _ = url.set_password(Some("redacted"));
            f.write_str(url.as_str())
        } else {
            f.write_str(self.0.as_str())
        }
    }
}

/// POSTs `body` as JSON to `url` and returns the body of a 2xx answer.
///
/// Every other outcome is a [`Failure`] classified for the retry loop: timeouts, connection
/// errors, 408, 429 and 5xx are retryable; other statuses are not.
pub(crate) async fn post_json<B: Serialize + ?Sized>(
    client: &Client,
    url: &Url,
    auth: Option<&HeaderValue>,
    body: &B,
    what: &str,
) -> Result<Vec<u8>, Failure> {
    let mut request = client.post(url.clone()).json(body);
    if let Some(auth) = auth {
        request = request.header(reqwest::header::AUTHORIZATION, auth.clone());
    }
    let mut response = request
        .send()
        .await
        .map_err(|e| transport_failure(e, what))?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(parse_retry_after);
    let body = read_body(&mut response, what).await?;
    if status.is_success() {
        Ok(body)
    } else {
        Err(status_failure(status, retry_after, &body, what))
    }
}

/// Reads at most [`MAX_BODY_BYTES`] of the response body.
async fn read_body(response: &mut reqwest::Response, what: &str) -> Result<Vec<u8>, Failure> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| transport_failure(e, what))?
    {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(Failure::fatal(
                ErrorKind::Internal,
                format!("{what} response is larger than {MAX_BODY_BYTES} bytes"),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Classifies an error of reqwest: timeouts and connection problems are worth a retry.
fn transport_failure(error: reqwest::Error, what: &str) -> Failure {
    let (kind, message) = if error.is_timeout() {
        (ErrorKind::Timeout, format!("{what} timed out"))
    } else if error.is_connect() {
        (ErrorKind::Unavailable, format!("cannot connect to {what}"))
    } else if error.is_builder() {
        return Failure {
            source: Some(error.without_url()),
            ..Failure::fatal(
                ErrorKind::Internal,
                format!("failed to build {what} request"),
            )
        };
    } else {
        (ErrorKind::Unavailable, format!("{what} connection failed"))
    };
    Failure {
        kind,
        message,
        source: Some(error.without_url()),
        retryable: true,
        retry_after: None,
    }
}

/// Classifies a non-2xx answer.
pub(crate) fn status_failure(
    status: StatusCode,
    retry_after: Option<Duration>,
    body: &[u8],
    what: &str,
) -> Failure {
    let mut message = format!("{what} returned {status}");
    if let Some(detail) = server_message(body) {
        message.push_str(": ");
        message.push_str(&detail);
    }
    let (kind, retryable) = match status.as_u16() {
        408 => (ErrorKind::Timeout, true),
        429 | 500..=599 => (ErrorKind::Unavailable, true),
        400 | 413 | 422 => (ErrorKind::InvalidInput, false),
        _ => (ErrorKind::Unavailable, false),
    };
    Failure {
        kind,
        message,
        source: None,
        retryable,
        retry_after,
    }
}

/// Extracts the server's error message: `{"error":{"message":..}}` (OpenAI, vLLM),
/// `{"error":".."}` (Ollama), `{"message":..}` or `{"detail":..}`, else the start of a text body.
pub(crate) fn server_message(body: &[u8]) -> Option<String> {
    let text = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(json) => {
            let candidates = [
                json.pointer("/error/message"),
                json.get("error"),
                json.get("message"),
                json.get("detail"),
            ];
            let found = candidates.into_iter().flatten().find_map(|v| match v {
                serde_json::Value::String(s) => Some(s.clone()),
                _ => None,
            });
            found?
        }
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return None;
    }
    Some(truncate_chars(&text, MAX_SERVER_MESSAGE_CHARS).to_owned())
}

/// Returns the first `max_chars` characters of `text`, cut on a char boundary.
pub(crate) fn truncate_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate_chars("héllo wörld", 2), "hé");
        assert_eq!(truncate_chars("日本語", 2), "日本");
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("abc", 10), "abc");
        assert_eq!(truncate_chars("abc", 0), "");
        assert_eq!(truncate_chars("", 5), "");
    }

    #[test]
    fn server_messages_are_extracted() {
        let m = |s: &str| server_message(s.as_bytes());
        assert_eq!(
            m(r#"{"error":{"message":"model `x` does not exist","type":"NotFound"}}"#).as_deref(),
            Some("model `x` does not exist")
        );
        assert_eq!(
            m(r#"{"error":"model not found"}"#).as_deref(),
            Some("model not found")
        );
        assert_eq!(m(r#"{"detail":"Not Found"}"#).as_deref(), Some("Not Found"));
        assert_eq!(
            m("upstream   overloaded\n").as_deref(),
            Some("upstream overloaded")
        );
        assert_eq!(m(r#"{"error":{"code":1}}"#), None);
        assert_eq!(m(""), None);
        assert_eq!(m(&"x".repeat(1000)).map(|s| s.len()), Some(300));
        assert_eq!(
            server_message(&[0xff, 0xfe, b'a']).as_deref(),
            Some("\u{fffd}\u{fffd}a")
        );
    }

    #[test]
    fn statuses_are_classified() {
        let classify = |code: u16| {
            let f = status_failure(
                StatusCode::from_u16(code).expect("status"),
                None,
                b"",
                "service",
            );
            (f.kind, f.retryable)
        };
        assert_eq!(classify(400), (ErrorKind::InvalidInput, false));
        assert_eq!(classify(401), (ErrorKind::Unavailable, false));
        assert_eq!(classify(403), (ErrorKind::Unavailable, false));
        assert_eq!(classify(404), (ErrorKind::Unavailable, false));
        assert_eq!(classify(408), (ErrorKind::Timeout, true));
        assert_eq!(classify(413), (ErrorKind::InvalidInput, false));
        assert_eq!(classify(422), (ErrorKind::InvalidInput, false));
        assert_eq!(classify(429), (ErrorKind::Unavailable, true));
        assert_eq!(classify(500), (ErrorKind::Unavailable, true));
        assert_eq!(classify(503), (ErrorKind::Unavailable, true));
        assert_eq!(classify(302), (ErrorKind::Unavailable, false));
    }

    #[test]
    fn status_message_carries_server_detail() {
        let f = status_failure(
            StatusCode::BAD_REQUEST,
            None,
            br#"{"error":{"message":"context too long"}}"#,
            "chat completion",
        );
        assert_eq!(
            f.message,
            "chat completion returned 400 Bad Request: context too long"
        );
    }

    #[test]
    fn urls_are_checked_and_redacted() {
        let ok = Url::parse("http://localhost:8000/v1").expect("url");
        assert!(check_http_url(&ok, "base url").is_ok());
        for bad in [
            "ftp://host/x",
            "mailto:someone@example.com",
            "file:///tmp/x",
        ] {
            let url = Url::parse(bad).expect("url");
            let err = check_http_url(&url, "base url").expect_err(bad);
            assert_eq!(err.kind(), ErrorKind::InvalidInput);
        }
        let secret = Url::parse("https://user:hunter2@example.com/v1").expect("url");
        let shown = Redacted(&secret).to_string();
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("user:redacted@example.com"), "{shown}");
    }

    #[test]
    fn bearer_header_is_sensitive_and_validated() {
        assert!(bearer_header(None).expect("none").is_none());
        let value = bearer_header(Some("sk-test")).expect("ok").expect("some");
        assert!(value.is_sensitive());
        assert_eq!(value.to_str().expect("ascii"), "Bearer sk-test");
        let err = bearer_header(Some("bad\nkey")).expect_err("newline");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(!err.to_string().contains("bad"));
    }

    #[test]
    fn zero_timeout_is_rejected() {
        let err = build_client(Duration::ZERO).expect_err("zero");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(build_client(Duration::from_secs(1)).is_ok());
    }
}
