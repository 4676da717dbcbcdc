//! Hand-written retry loop: exponential backoff with a little jitter, honouring `Retry-After`.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crag_ports::{ErrorKind, PortError, PortResult};
use reqwest::header::HeaderValue;

/// Fraction of a backoff delay that jitter may take away, in per mille.
const JITTER_PER_MILLE: u128 = 100;

/// How often and how patiently a failed call is repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt (0 = a single attempt).
    pub(crate) max_retries: u32,
    /// Delay before the first retry.
    pub(crate) initial_backoff: Duration,
    /// Longest delay between two attempts, `Retry-After` included.
    pub(crate) max_backoff: Duration,
}

impl RetryPolicy {
    /// Returns the delay before retry number `retry` (0-based): `initial * 2^retry` capped at
    /// `max_backoff`, less up to 10% jitter drawn from `jitter`. Never panics, never overflows.
    pub(crate) fn backoff(&self, retry: u32, jitter: u64) -> Duration {
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        let base = self
            .initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff);
        let cut = base.as_nanos() * JITTER_PER_MILLE / 1000 * u128::from(jitter % 1001) / 1000;
        base.saturating_sub(Duration::from_nanos(u64::try_from(cut).unwrap_or(u64::MAX)))
    }

    /// Returns the delay before retry number `retry`: the server's `Retry-After` capped at
    /// `max_backoff` when it sent one, the jittered exponential backoff otherwise.
    pub(crate) fn delay(&self, retry: u32, retry_after: Option<Duration>, jitter: u64) -> Duration {
        match retry_after {
            Some(wait) => wait.min(self.max_backoff),
            None => self.backoff(retry, jitter),
        }
    }
}

/// Parses a `Retry-After` header given in seconds; HTTP dates and garbage give `None`.
pub(crate) fn parse_retry_after(value: &HeaderValue) -> Option<Duration> {
    let text = value.to_str().ok()?.trim();
    text.parse::<u64>().ok().map(Duration::from_secs)
}

/// Returns a pseudo-random number from the clock and a counter (no `rand` crate needed).
pub(crate) fn jitter_seed() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()))
        .unwrap_or(0);
    splitmix64(nanos ^ COUNTER.fetch_add(0x9E37_79B9, Ordering::Relaxed))
}

fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
    let mut retries = 0u32;
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(failure) if failure.retryable && retries < policy.max_retries => {
                let delay = policy.delay(retries, failure.retry_after, jitter_seed());
                tracing::warn!(
                    what,
                    error = %failure.message,
                    retry = retries + 1,
                    max_retries = policy.max_retries,
                    delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    "retrying"
                );
                tokio::time::sleep(delay).await;
                retries += 1;
            }
            Err(failure) => return Err(failure.into_port_error(retries + 1)),
        }
    }
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
    fn backoff_doubles_until_capped() {
        let p = policy(3, 500, 8000);
        let delays: Vec<u128> = (0..7).map(|r| p.backoff(r, 0).as_millis()).collect();
        assert_eq!(delays, vec![500, 1000, 2000, 4000, 8000, 8000, 8000]);
    }

    #[test]
    fn jitter_takes_at_most_a_tenth() {
        let p = policy(3, 500, 8000);
        for seed in [1, 7, 500, 999, 1000, 1001, u64::MAX, 123_456_789] {
            for retry in 0..6 {
                let full = p.backoff(retry, 0);
                let jittered = p.backoff(retry, seed);
                assert!(jittered <= full, "{jittered:?} > {full:?}");
                assert!(
                    jittered >= full.mul_f64(0.9),
                    "{jittered:?} < 0.9 * {full:?}"
                );
            }
        }
        // The largest jitter takes exactly 10%.
        assert_eq!(p.backoff(0, 1000), Duration::from_millis(450));
        // Jitter still applies at the cap.
        assert!(p.backoff(10, 1000) < Duration::from_millis(8000));
    }

    #[test]
    fn backoff_never_overflows() {
        let p = RetryPolicy {
            max_retries: u32::MAX,
            initial_backoff: Duration::MAX,
            max_backoff: Duration::MAX,
        };
        for retry in [0, 1, 31, 32, 33, 1000, u32::MAX] {
            let d = p.backoff(retry, u64::MAX);
            assert!(d > Duration::ZERO);
        }
        assert_eq!(policy(3, 0, 0).backoff(u32::MAX, 5), Duration::ZERO);
    }

    #[test]
    fn retry_after_wins_but_is_capped() {
        let p = policy(3, 500, 8000);
        assert_eq!(p.delay(0, Some(Duration::ZERO), 42), Duration::ZERO);
        assert_eq!(
            p.delay(2, Some(Duration::from_secs(3)), 42),
            Duration::from_secs(3)
        );
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3600)), 42),
            Duration::from_secs(8)
        );
        assert_eq!(p.delay(1, None, 0), Duration::from_secs(1));
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

    #[test]
    fn jitter_seeds_vary() {
        let seeds: std::collections::HashSet<u64> = (0..16).map(|_| jitter_seed()).collect();
        assert!(seeds.len() > 1);
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
}
