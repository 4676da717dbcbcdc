//! Expiry in the background.

use std::sync::Arc;
use std::time::Duration;

use crag_ports::SessionStore;
use tokio::task::JoinHandle;

use crate::now_ms;

/// Expires sessions idle longer than `idle`, every `every`, until the handle is aborted.
/// Failures are logged and retried at the next tick.
pub fn spawn_sweeper(
    store: Arc<dyn SessionStore>,
    every: Duration,
    idle: Duration,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let idle_ms = i64::try_from(idle.as_millis()).unwrap_or(i64::MAX);
            match store.expire(now_ms().saturating_sub(idle_ms)).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(expired = n, "expired idle sessions"),
                Err(e) => tracing::warn!(error = %e, "session expiry failed"),
            }
        }
    })
}
