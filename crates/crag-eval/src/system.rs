//! What a run costs the machine: peak memory, bytes on disk.

use std::path::Path;

/// Peak resident memory of this process (Linux `VmHWM`), if known.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Bytes under `dir` (0 when it cannot be read).
pub fn dir_size(dir: &Path) -> u64 {
    fn walk(dir: &Path) -> std::io::Result<u64> {
        let mut total = 0;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            total += if meta.is_dir() {
                walk(&entry.path())?
            } else {
                meta.len()
            };
        }
        Ok(total)
    }
    walk(dir).unwrap_or(0)
}
