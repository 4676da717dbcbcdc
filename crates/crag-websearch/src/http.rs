//! The HTTP client the providers share: construction, request checks, status and transport
//! error mapping, bounded body reading and logging.

use std::time::{Duration, Instant};

use crag_ports::{ErrorKind, PortError, PortResult, WebResult};
use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{RequestBuilder, Response, StatusCode};

/// Timeout of a whole search request (connect, send, read) unless configured otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// User agent sent unless configured otherwise.
pub const DEFAULT_USER_AGENT: &str = concat!(
    "Mozilla/5.0 (compatible; crag/",
    env!("CARGO_PKG_VERSION"),
    "; +websearch)"
);

/// Largest answer body read; anything longer is refused as unreadable.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How a provider explains a non-2xx answer from its status, headers and (bounded) body; the
/// explanation must not quote the body.
pub(crate) type Explain = fn(StatusCode, &HeaderMap, &[u8]) -> Option<String>;

/// A `reqwest` client bound to one provider and its timeout.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    provider: &'static str,
    timeout: Duration,
}

impl Http {
    /// Builds a client whose requests time out after `timeout` as a whole.
    pub(crate) fn new(
        provider: &'static str,
        timeout: Duration,
        user_agent: &str,
    ) -> PortResult<Self> {
        if timeout.is_zero() {
            return Err(PortError::invalid_input(format!(
                "{provider} timeout must be positive"
            )));
        }
        let agent = HeaderValue::from_str(user_agent).map_err(|_| {
            PortError::invalid_input(format!("{provider} user agent is not a valid header value"))
        })?;
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(agent)
            .build()
            .map_err(|e| {
                PortError::with_source(
                    ErrorKind::Unavailable,
                    format!("failed to build the {provider} http client"),
                    e,
                )
            })?;
        Ok(Self {
            client,
            provider,
            timeout,
        })
    }

    /// Returns the underlying client, to build requests with.
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Sends `request` and returns the body of a 2xx answer; maps every failure to a kind.
    pub(crate) async fn fetch(&self, request: RequestBuilder) -> PortResult<Vec<u8>> {
        let response = request.send().await.map_err(|e| self.transport_error(e))?;
        if !response.status().is_success() {
            return Err(self.status_error(response.status(), response.headers(), None));
        }
        self.read_body(response).await
    }

    /// [`fetch`](Self::fetch), reading the body of a non-2xx answer too so that `explain` can
    /// add what the status means to the error message.
    pub(crate) async fn fetch_explained(
        &self,
        request: RequestBuilder,
        explain: Explain,
    ) -> PortResult<Vec<u8>> {
        let response = request.send().await.map_err(|e| self.transport_error(e))?;
        let status = response.status();
        if status.is_success() {
            return self.read_body(response).await;
        }
        let headers = response.headers().clone();
        let body = self.read_body(response).await.unwrap_or_default();
        let explanation = explain(status, &headers, &body);
        Err(self.status_error(status, &headers, explanation.as_deref()))
    }

    /// Reads the body, refusing answers above [`MAX_BODY_BYTES`].
    async fn read_body(&self, mut response: Response) -> PortResult<Vec<u8>> {
        let too_large = || {
            PortError::new(
                ErrorKind::Internal,
                format!(
                    "{} answer is larger than {} MiB",
                    self.provider,
                    MAX_BODY_BYTES / (1024 * 1024)
                ),
            )
        };
        if response
            .content_length()
            .is_some_and(|n| n > MAX_BODY_BYTES as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport_error(e))?
        {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Maps a non-2xx answer: all are `Unavailable`, with the status in the message.
    fn status_error(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        explanation: Option<&str>,
    ) -> PortError {
        let mut message = format!("{} answered http {status}", self.provider);
        if let Some(explanation) = explanation {
            message.push_str(&format!(": {explanation}"));
        }
        let retry_after = headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty() && v.len() <= 40);
        if let Some(retry_after) = retry_after {
            message.push_str(&format!(" (retry after {retry_after})"));
        }
        PortError::new(ErrorKind::Unavailable, message)
    }

    /// Maps a `reqwest` failure; the URL (which holds the query) is dropped from the source.
    fn transport_error(&self, error: reqwest::Error) -> PortError {
        let provider = self.provider;
        let error = error.without_url();
        let (kind, message) = if error.is_timeout() {
            (
                ErrorKind::Timeout,
                format!("{provider} did not answer within {:?}", self.timeout),
            )
        } else if error.is_connect() {
            (ErrorKind::Unavailable, format!("{provider} is unreachable"))
        } else if error.is_redirect() {
            (
                ErrorKind::Unavailable,
                format!("{provider} redirected too many times"),
            )
        } else if error.is_builder() {
            (
                ErrorKind::Internal,
                format!("failed to build the {provider} request"),
            )
        } else if error.is_body() || error.is_decode() {
            (
                ErrorKind::Unavailable,
                format!("failed to read the {provider} answer"),
            )
        } else {
            (
                ErrorKind::Unavailable,
                format!("request to {provider} failed"),
            )
        };
        PortError::with_source(kind, message, error)
    }
}

/// Checks the arguments of a search; returns the trimmed query.
pub(crate) fn check_request(query: &str, limit: usize) -> PortResult<&str> {
    let query = query.trim();
    if query.is_empty() {
        return Err(PortError::invalid_input("query is empty"));
    }
    if limit == 0 {
        return Err(PortError::invalid_input("limit must be positive"));
    }
    Ok(query)
}

/// Logs the outcome of one search: `debug` on success, `warn` on failure.
pub(crate) fn log_outcome(provider: &str, started: Instant, outcome: &PortResult<Vec<WebResult>>) {
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match outcome {
        Ok(results) => {
            tracing::debug!(
                provider,
                latency_ms,
                results = results.len(),
                "web search done"
            );
        }
        Err(error) => {
            tracing::warn!(
                provider,
                latency_ms,
                kind = %error.kind(),
                %error,
                "web search failed"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_request_rejects_empty_query_and_zero_limit() {
        assert_eq!(check_request("  rust \n", 3).ok(), Some("rust"));
        let empty = check_request(" \t", 3).unwrap_err();
        assert_eq!(empty.kind(), ErrorKind::InvalidInput);
        let zero = check_request("rust", 0).unwrap_err();
        assert_eq!(zero.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn new_rejects_zero_timeout_and_bad_user_agent() {
        let zero = Http::new("searxng", Duration::ZERO, "crag").unwrap_err();
        assert_eq!(zero.kind(), ErrorKind::InvalidInput);
        let agent = Http::new("searxng", DEFAULT_TIMEOUT, "crag\nx").unwrap_err();
        assert_eq!(agent.kind(), ErrorKind::InvalidInput);
    }
}
