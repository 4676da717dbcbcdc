//! Calibration files of the calibrated relevance evaluator: written by `crag calibrate`, read
//! by the composition root when `[evaluator] kind = "calibrated"`.

use std::path::Path;

use crate::error::{ConfigError, Result};
use crag_judge::Calibration;

/// Reads a calibration file written by `crag calibrate`; errors name the file.
pub fn read_calibration(path: &Path) -> Result<Calibration> {
    let invalid = |e: ConfigError| e.within("calibration_file", Some(path));
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        what: "calibration_file",
        path: path.to_path_buf(),
        source,
    })?;
    let calibration: Calibration =
        toml::from_str(&text).map_err(|e| invalid(ConfigError::from(e)))?;
    calibration
        .validate()
        .map_err(|e| invalid(ConfigError::from(e)))?;
    Ok(calibration)
}

/// Writes `calibration` to `path` as TOML, headed by comments saying what it is and what it
/// was fitted on.
pub fn write_calibration(path: &Path, calibration: &Calibration) -> Result<()> {
    let body = toml::to_string(calibration).map_err(|source| ConfigError::Render {
        what: "calibration",
        source,
    })?;
    let text = format!(
        "# crag calibration (calibrated relevance evaluator), written by `crag calibrate`.\n\
         # Fitted on: {}\n\
         # Load it with [evaluator] kind = \"calibrated\", calibration_file = \"<this file>\".\n\
         # Feature names must match what this crag version computes; refit after upgrades.\n\n{body}",
        calibration.fitted_on.replace('\n', " ")
    );
    std::fs::write(path, text).map_err(|source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    })
}
