//! Retries with exponential backoff and jitter (`backon`), honouring the server's
//! `Retry-After`; what is retryable is decided by the adapter ([`Failure::retryable`]).

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable as _};
use crag_ports::{ErrorKind, PortError, PortResult};
use reqwest::header::HeaderValue;

/// How often and how patiently a failed call is repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt (0 = a single attempt).
    pub(crate) max_retries: u32,
    /// Delay before the first retry; it doubles with each further retry, plus jitter.
    pub(crate) initial_backoff: Duration,
    /// Longest delay between two attempts before jitter, `Retry-After` included.
    pub(crate) max_backoff: Duration,
}

impl RetryPolicy {
    fn backoff(&self) -> ExponentialBuilder {
        ExponentialBuilder::default()
            .with_min_delay(self.initial_backoff)
            .with_max_delay(self.max_backoff)
            .with_factor(2.0)
            .with_max_times(self.max_retries as usize)
            .with_jitter()
    }
}

/// Parses a `Retry-After` header given in seconds; HTTP dates and garbage give `None`.
pub(crate) fn parse_retry_after(value: &HeaderValue) -> Option<Duration> {
    let text = value.to_str().ok()?.trim();
    text.parse::<u64>().ok().map(Duration::from_secs)
}

/// A failed attempt, classified for the retry loop.
#[derive(Debug)]
pub(crate) struct Failure {
    /// Kind of the error if this is the last attempt.
    pub(crate) kind: ErrorKind,
    /// Concise lowercase message.
    pub(crate) message: String,
    /// The transport error behind it, if any.
    pub(crate) source: Option<reqwest::Error>,
    /// Whether repeating the call may succeed.
    pub(crate) retryable: bool,
    /// Delay the server asked for.
    pub(crate) retry_after: Option<Duration>,
}

impl Failure {
    /// A failure that repeating cannot fix.
    pub(crate) fn fatal(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
            retryable: false,
            retry_after: None,
        }
    }

    /// Converts into the port error after `attempts` attempts.
    pub(crate) fn into_port_error(self, attempts: u32) -> PortError {
        let message = if attempts > 1 {
            format!("{} (after {attempts} attempts)", self.message)
        } else {
            self.message
        };
        match self.source {
            Some(source) => PortError::with_source(self.kind, message, source),
            None => PortError::new(self.kind, message),
        }
    }
}

/// Runs `attempt` until it succeeds, fails for good, or `policy.max_retries` retries are spent.
pub(crate) async fn retry<T, F, Fut>(
    policy: &RetryPolicy,
    what: &str,
    mut attempt: F,
) -> PortResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let attempts = AtomicU32::new(0);
    let max_backoff = policy.max_backoff;
    let result = (|| {
        attempts.fetch_add(1, Ordering::Relaxed);
        attempt()
    })
    .retry(policy.backoff())
    .sleep(tokio::time::sleep)
    .when(|failure: &Failure| failure.retryable)
    .adjust(|failure: &Failure, delay: Option<Duration>| {
        // The server's wish replaces the backoff, within the same cap; an exhausted budget
        // (no delay) stays exhausted.
        delay.map(|d| failure.retry_after.map_or(d, |wait| wait.min(max_backoff)))
    })
    .notify(|failure: &Failure, delay: Duration| {
        tracing::warn!(
            what,
            error = %failure.message,
            retry = attempts.load(Ordering::Relaxed),
            max_retries = policy.max_retries,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            "retrying"
        );
    })
    .await;
    result.map_err(|failure| failure.into_port_error(attempts.load(Ordering::Relaxed)))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;

    use super::*;

    fn policy(max_retries: u32, initial_ms: u64, max_ms: u64) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            initial_backoff: Duration::from_millis(initial_ms),
            max_backoff: Duration::from_millis(max_ms),
        }
    }

    #[test]
    fn retry_after_parses_seconds_only() {
        let parse = |s: &str| parse_retry_after(&HeaderValue::from_str(s).expect("header"));
        assert_eq!(parse("0"), Some(Duration::ZERO));
        assert_eq!(parse(" 12 "), Some(Duration::from_secs(12)));
        assert_eq!(parse("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse("-1"), None);
        assert_eq!(parse("1.5"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("99999999999999999999999"), None);
    }

    fn unavailable(retryable: bool) -> Failure {
        Failure {
            retryable,
            ..Failure::fatal(ErrorKind::Unavailable, "server returned 503")
        }
    }

    #[tokio::test]
    async fn retry_stops_on_success() {
        let calls = AtomicU32::new(0);
        let result = retry(&policy(3, 0, 0), "test", || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < 2 {
                    Err(unavailable(true))
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(result.expect("third call succeeds"), 2);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn retry_gives_up_after_max_retries() {
        let calls = AtomicU32::new(0);
        let result: PortResult<()> = retry(&policy(2, 0, 0), "test", || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(unavailable(true)) }
        })
        .await;
        let err = result.expect_err("always fails");
        assert_eq!(err.kind(), ErrorKind::Unavailable);
        assert_eq!(err.to_string(), "server returned 503 (after 3 attempts)");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn retry_does_not_repeat_fatal_failures() {
        let calls = AtomicU32::new(0);
        let result: PortResult<()> = retry(&policy(5, 0, 0), "test", || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(Failure::fatal(ErrorKind::InvalidInput, "bad request")) }
        })
        .await;
        let err = result.expect_err("fatal");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert_eq!(err.to_string(), "bad request");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    /// On tokio's paused clock: the waits are the backoff's (doubling from 500 ms, jitter at
    /// most doubling each) or the server's `Retry-After`, capped at `max_backoff`.
    #[tokio::test(start_paused = true)]
    async fn waits_follow_the_backoff_and_the_server() {
        let started = tokio::time::Instant::now();
        let _: PortResult<()> = retry(&policy(3, 500, 8000), "test", || async {
            Err(unavailable(true))
        })
        .await;
        let waited = started.elapsed();
        // 500 + 1000 + 2000 ms before jitter, at most twice that with it.
        assert!(waited >= Duration::from_millis(3500), "{waited:?}");
        assert!(waited <= Duration::from_millis(7000), "{waited:?}");

        let started = tokio::time::Instant::now();
        let _: PortResult<()> = retry(&policy(2, 500, 8000), "test", || async {
            Err(Failure {
                retry_after: Some(Duration::from_secs(3600)),
                ..unavailable(true)
            })
        })
        .await;
        // Two retries, each capped at 8 s instead of the hour asked for.
        assert_eq!(started.elapsed().as_secs(), 16);
    }
}
