//! What the tests of the `crag` binary share.
// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs `crag --data-dir DATA ARGS...` to its end.
pub fn crag(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crag"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("CRAG_VECTORS_URI")
        .output()
        .expect("run crag")
}

pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn stdout_json(out: &Output) -> serde_json::Value {
    assert_success(out);
    serde_json::from_slice(&out.stdout).expect("json on stdout")
}

/// The S3-compatible server of the object-store tests: `CRAG_TEST_S3_URL`, or moto started by
/// `scripts/s3-server.sh` (the test script starts it once).
pub fn s3_endpoint() -> String {
    if let Ok(url) = std::env::var("CRAG_TEST_S3_URL") {
        return url;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/s3-server.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg("start")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "no S3-compatible server: set CRAG_TEST_S3_URL or let {} start moto ({})",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .expect("the script prints a URL")
        .to_owned()
}
