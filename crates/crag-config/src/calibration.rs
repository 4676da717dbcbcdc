//! Calibration files of the calibrated relevance evaluator: written by `crag calibrate`, read
//! by the composition root when `[evaluator] kind = "calibrated"`.

use std::path::Path;

use anyhow::{Context as _, Result};
use crag_judge::Calibration;

/// Reads a calibration file written by `crag calibrate`; errors name the file.
pub fn read_calibration(path: &Path) -> Result<Calibration> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read calibration_file {}", path.display()))?;
    let calibration: Calibration = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("invalid calibration_file {}", path.display()))?;
    calibration
        .validate()
        .with_context(|| format!("invalid calibration_file {}", path.display()))?;
    Ok(calibration)
}

/// Writes `calibration` to `path` as TOML, headed by comments saying what it is and what it
/// was fitted on.
pub fn write_calibration(path: &Path, calibration: &Calibration) -> Result<()> {
    let body = toml::to_string(calibration).context("failed to render the calibration")?;
    let text = format!(
        "# crag calibration (calibrated relevance evaluator), written by `crag calibrate`.\n\
         # Fitted on: {}\n\
         # Load it with [evaluator] kind = \"calibrated\", calibration_file = \"<this file>\".\n\
         # Feature names must match what this crag version computes; refit after upgrades.\n\n{body}",
        calibration.fitted_on.replace('\n', " ")
    );
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
