//! One way to call an external service: with a time limit and a fail mode.

use std::future::Future;
use std::time::Duration;

use crag_ports::{ErrorKind, PortError, PortResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// What to do when an external service (evaluator, web search) fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailMode {
    /// Keep what we have, record the failure in the result's warnings.
    #[default]
    Open,
    /// Fail the query with the service's error.
    Closed,
}

/// What a guarded call gave.
#[derive(Debug)]
pub(crate) enum Guarded<T> {
    /// The service answered.
    Done(T),
    /// It failed or timed out and the fail mode is open: the caller carries on without it.
    FailedOpen(PortError),
}

/// Runs `call`, bounded by `timeout`. A failure or a timeout is returned as an error when
/// `fail_mode` is closed and as [`Guarded::FailedOpen`] when it is open; `what` names the
/// service in the timeout's message.
pub(crate) async fn guarded<T>(
    what: &str,
    timeout: Duration,
    fail_mode: FailMode,
    call: impl Future<Output = PortResult<T>>,
) -> Result<Guarded<T>> {
    let failure = match tokio::time::timeout(timeout, call).await {
        Ok(Ok(value)) => return Ok(Guarded::Done(value)),
        Ok(Err(e)) => e,
        Err(_) => PortError::new(
            ErrorKind::Timeout,
            format!("{what} did not answer within {timeout:?}"),
        ),
    };
    match fail_mode {
        FailMode::Closed => Err(failure.into()),
        FailMode::Open => Ok(Guarded::FailedOpen(failure)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_pass_through() {
        let r = guarded("svc", Duration::from_secs(1), FailMode::Closed, async {
            Ok::<_, PortError>(7)
        })
        .await
        .unwrap();
        assert!(matches!(r, Guarded::Done(7)));
    }

    #[tokio::test]
    async fn failures_follow_the_fail_mode() {
        let fail = || async { Err::<(), _>(PortError::new(ErrorKind::Unavailable, "down")) };
        let open = guarded("svc", Duration::from_secs(1), FailMode::Open, fail())
            .await
            .unwrap();
        assert!(matches!(open, Guarded::FailedOpen(e) if e.kind() == ErrorKind::Unavailable));
        let closed = guarded("svc", Duration::from_secs(1), FailMode::Closed, fail()).await;
        assert!(closed.unwrap_err().to_string().contains("down"));
    }

    #[tokio::test]
    async fn a_slow_service_times_out_with_its_name() {
        let slow = async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<_, PortError>(())
        };
        let r = guarded("web search", Duration::from_millis(5), FailMode::Open, slow)
            .await
            .unwrap();
        match r {
            Guarded::FailedOpen(e) => {
                assert_eq!(e.kind(), ErrorKind::Timeout);
                assert!(e.to_string().contains("web search did not answer"), "{e}");
            }
            Guarded::Done(()) => panic!("a 60 s call answered within 5 ms"),
        }
    }
}
