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
