use std::path::Path;
use std::sync::OnceLock;

use crate::error::{OnnxError, Result};

/// ONNX Runtime allows one environment per process; it is created on first use and kept.
static ENVIRONMENT: OnceLock<std::result::Result<ort::environment::Environment, String>> =
    OnceLock::new();

/// Loads `libonnxruntime` from `library` and creates the process-wide environment, once;
/// later calls return the same environment whatever `library` they name.
pub(crate) fn ensure_runtime(library: &Path) -> Result<&'static ort::environment::Environment> {
    let env = ENVIRONMENT.get_or_init(|| {
        ort::init_from(library)
            .map_err(|e| format!("failed to load {}: {e}", library.display()))?
            .with_name("crag")
            .with_telemetry(false)
            .build()
            .map_err(|e| format!("failed to create environment: {e}"))
    });
    env.as_ref().map_err(|e| OnnxError::Runtime(e.clone()))
}
