//! The module path of a source file, the prefix of its qualified names.

use crate::Language;

/// The module path of the file at `path`, segments joined with `::`:
///
/// - Rust: the crate (the directory holding `src/`, dashes as underscores) and the modules
///   below `src/` (`lib.rs`, `main.rs` and `mod.rs` name their directory):
///   `crates/crag-engine/src/cgrag/ask.rs` is `crag_engine::cgrag::ask`;
/// - Python: the path without `.py`, a leading `src/` dropped, `__init__` naming its package;
/// - TypeScript / JavaScript: the path without extension, `index` naming its directory;
/// - Go: the directory (the package).
///
/// `.` segments are dropped and `..` ones remove the segment before them.
pub fn module_path(path: &str, language: Language) -> String {
    let normalised = path.replace('\\', "/");
    let mut segments: Vec<&str> = Vec::new();
    for segment in normalised.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let Some(file) = segments.pop() else {
        return String::new();
    };
    let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
    let clean = |s: &str| s.replace(['-', '.', ' '], "_");
    let parts: Vec<String> = match language {
        Language::Rust => {
            let crate_at = segments.iter().rposition(|s| *s == "src");
            let (krate, below): (Option<&str>, &[&str]) = match crate_at {
                Some(i) => (i.checked_sub(1).map(|j| segments[j]), &segments[i + 1..]),
                None => (None, &segments[..]),
            };
            let mut out: Vec<String> = krate.map(clean).into_iter().collect();
            out.extend(below.iter().map(|s| clean(s)));
            if !matches!(stem, "lib" | "main" | "mod") {
                out.push(clean(stem));
            }
            out
        }
        Language::Python => {
            let start = usize::from(segments.first() == Some(&"src"));
            let mut out: Vec<String> = segments[start..].iter().map(|s| clean(s)).collect();
            if stem != "__init__" {
                out.push(clean(stem));
            }
            out
        }
        Language::TypeScript | Language::Tsx | Language::JavaScript => {
            let mut out: Vec<String> = segments.iter().map(|s| clean(s)).collect();
            if stem != "index" {
                out.push(clean(stem));
            }
            out
        }
        Language::Go => segments.iter().map(|s| clean(s)).collect(),
    };
    parts.join("::")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_paths_per_language() {
        let rust = |p| module_path(p, Language::Rust);
        assert_eq!(
            rust("crates/crag-engine/src/cgrag/ask.rs"),
            "crag_engine::cgrag::ask"
        );
        assert_eq!(rust("crates/crag-engine/src/lib.rs"), "crag_engine");
        assert_eq!(
            rust("./crates/crag-engine/src/code/mod.rs"),
            "crag_engine::code"
        );
        assert_eq!(rust("/abs/x/my-app/src/main.rs"), "my_app");
        assert_eq!(rust("build.rs"), "build");
        assert_eq!(rust("crates/app/tests/../src/x.rs"), "app::x");
        let py = |p| module_path(p, Language::Python);
        assert_eq!(py("src/requests/api.py"), "requests::api");
        assert_eq!(py("requests/__init__.py"), "requests");
        let ts = |p| module_path(p, Language::TypeScript);
        assert_eq!(ts("web/src/app/index.ts"), "web::src::app");
        assert_eq!(ts("web/util.ts"), "web::util");
        assert_eq!(
            module_path("pkg/server/handler.go", Language::Go),
            "pkg::server"
        );
        assert_eq!(module_path("", Language::Go), "");
    }
}
