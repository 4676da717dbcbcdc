//! `[sessions]`: where CGRAG sessions are kept.

use std::path::{Path, PathBuf};

use crate::error::{bail, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Session store backends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionBackend {
    /// A SQLite file (default: `<data_dir>/sessions.sqlite`).
    #[default]
    Sqlite,
    /// A Postgres database (`url`).
    Postgres,
    /// No sessions: every `ask` is ephemeral and a session id is refused.
    Off,
}

/// `[sessions]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SessionsSection {
    /// `sqlite`, `postgres` or `off` (every ask ephemeral; a session id is refused).
    pub backend: SessionBackend,
    /// The SQLite file.
    pub path: Option<PathBuf>,
    /// Postgres URL (`postgres://user@host/db`; a unix socket: `?host=/dir`); with neither
    /// this nor `url_env`, `[storage] postgres_url`, the URL every shared store uses.
    #[schemars(example = &"postgres://crag@localhost/crag")]
    pub url: Option<String>,
    /// Environment variable holding the Postgres URL (keeps passwords out of files).
    pub url_env: Option<String>,
    /// Sessions idle this many minutes are expired.
    pub idle_minutes: u64,
    /// How often the servers expire idle sessions.
    pub sweep_seconds: u64,
    /// Postgres pool size.
    pub max_connections: u32,
    /// Connection wait and Postgres statement timeout.
    pub timeout_ms: u64,
}

impl Default for SessionsSection {
    fn default() -> Self {
        Self {
            backend: SessionBackend::Sqlite,
            path: None,
            url: None,
            url_env: None,
            idle_minutes: 30,
            sweep_seconds: 60,
            max_connections: 8,
            timeout_ms: 5000,
        }
    }
}

impl SessionsSection {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.idle_minutes == 0 {
            bail!("sessions.idle_minutes must be at least 1");
        }
        if self.sweep_seconds == 0 {
            bail!("sessions.sweep_seconds must be at least 1");
        }
        if self.max_connections == 0 {
            bail!("sessions.max_connections must be at least 1");
        }
        if self.timeout_ms == 0 {
            bail!("sessions.timeout_ms must be positive");
        }
        Ok(())
    }

    /// The SQLite file under `data_dir`.
    pub fn sqlite_path(&self, data_dir: &Path) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| data_dir.join("sessions.sqlite"))
    }

    /// The Postgres URL: `url`, else the value of `$url_env`.
    pub fn postgres_url(&self) -> Result<String> {
        if let Some(url) = self.url.as_deref().filter(|u| !u.trim().is_empty()) {
            return Ok(url.to_owned());
        }
        if let Some(var) = &self.url_env {
            if let Ok(url) = std::env::var(var) {
                if !url.trim().is_empty() {
                    return Ok(url);
                }
            }
            bail!(
                "sessions.backend = \"postgres\": the variable {var} (sessions.url_env) is not set"
            );
        }
        bail!("sessions.backend = \"postgres\" needs sessions.url or sessions.url_env")
    }
}
