//! Classifying a gap into the query of pass 2's targeted retrieval: a specific gap (a symbol,
//! a qualified name, a path) is looked up by name, a fuzzy one is searched by meaning.

use serde::{Deserialize, Serialize};

use crate::clean::{clean_item, collapse_whitespace, strip_wrapping};

/// What kind of code item a gap names, when it says so ("function X", "the `Y` class").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    /// `function`, `fn`, `func`, `def`, `procedure`, `decorator`.
    Function,
    /// `method`, `constructor`.
    Method,
    /// `class`.
    Class,
    /// `struct`.
    Struct,
    /// `enum`.
    Enum,
    /// `trait`.
    Trait,
    /// `interface`, `protocol`.
    Interface,
    /// `type`, `typedef`, `alias`.
    Type,
    /// `module`, `package`, `namespace`, `crate`.
    Module,
    /// `constant`, `const`.
    Constant,
    /// `variable`, `var`, `global`.
    Variable,
    /// `field`, `attribute`, `property`, `member`.
    Field,
    /// `macro`.
    Macro,
}

/// The retrieval target a gap describes, from the most to the least specific.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum GapQuery {
    /// A symbol in a file: "verify_user in auth.py", "`foo` in src/lib.rs",
    /// "verify_user (auth.py)", "tests/test_auth.py::test_login". `symbol` may be qualified
    /// (`Type::method`).
    SymbolInPath {
        /// The symbol as written, without quotes, kind words or a trailing `()`.
        symbol: String,
        /// The file or directory.
        path: String,
    },
    /// A topic, not a symbol, in a file: "how errors are logged in src/log.rs".
    TopicInPath {
        /// The topic words.
        topic: String,
        /// The file or directory.
        path: String,
    },
    /// A qualified name split into its segments: "Type::method", "module.Class.method",
    /// "verify_user in the auth module" (`["auth", "verify_user"]`).
    Qualified {
        /// The segments, outermost first.
        path: Vec<String>,
    },
    /// A single symbol: "function X", "class Y", "the `X` function", or a bare code-like
    /// identifier (`verify_user`, `VerifyUser`, `verifyUser`, `` `session` ``, `run()`).
    Symbol {
        /// The identifier.
        name: String,
        /// The kind the gap names, if any (`run()` counts as a function).
        kind: Option<SymbolKind>,
    },
    /// A file or directory: "src/auth/mod.rs", "the file config.yaml".
    Path(String),
    /// Everything else, for vector search: "how errors are logged".
    Fuzzy(String),
}

impl GapQuery {
    /// Returns whether the query names something exact (anything but [`GapQuery::Fuzzy`]),
    /// worth a lookup before a vector search.
    pub fn is_specific(&self) -> bool {
        !matches!(self, GapQuery::Fuzzy(_))
    }
}

/// File extensions that make a dotted token a file name rather than a qualified name.
const EXTENSIONS: &[&str] = &[
    "bash", "c", "cc", "cfg", "cjs", "conf", "cpp", "cs", "css", "csv", "cxx", "dart", "env", "ex",
    "exs", "go", "gradle", "h", "hpp", "hs", "htm", "html", "ini", "ipynb", "java", "jl", "js",
    "json", "jsx", "kt", "kts", "lock", "lua", "m", "md", "mjs", "ml", "php", "pl", "proto", "ps1",
    "py", "pyi", "r", "rb", "rs", "rst", "sass", "scala", "scss", "sh", "sql", "svelte", "swift",
    "tf", "toml", "ts", "tsx", "txt", "vue", "xml", "yaml", "yml", "zig", "zsh",
];

/// File names without an extension.
const BARE_FILES: &[&str] = &[
    "Makefile",
    "Dockerfile",
    "Justfile",
    "Rakefile",
    "Gemfile",
    "Procfile",
    "Containerfile",
];

/// First directory names that make `a/b` a path rather than prose ("and/or").
const COMMON_DIRS: &[&str] = &[
    "src", "lib", "app", "apps", "crates", "pkg", "cmd", "internal", "tests", "test", "scripts",
    "docs", "bin", "include", "backend", "frontend", "api", "core", "config", "packages",
];

/// Words before a symbol that say nothing about it.
const LEADING_FILLER: &[&[&str]] = &[
    &["the", "definition", "of"],
    &["definition", "of"],
    &["the", "implementation", "of"],
    &["implementation", "of"],
    &["the", "source", "code", "of"],
    &["the", "source", "of"],
    &["source", "of"],
    &["the", "code", "for"],
    &["code", "for"],
    &["the", "body", "of"],
    &["the", "signature", "of"],
    &["the"],
    &["a"],
    &["an"],
];

/// Words after a symbol that say nothing about it.
const TRAILING_FILLER: &[&str] = &["definition", "implementation", "source", "code", "impl"];

/// Returns the kind a word names, `Some(None)` for a word that names no kind but is no
/// identifier either (`impl`).
fn kind_word(word: &str) -> Option<Option<SymbolKind>> {
    use SymbolKind::*;
    let kind = match word.to_lowercase().as_str() {
        "function" | "func" | "fn" | "def" | "procedure" | "decorator" => Function,
        "method" | "constructor" => Method,
        "class" => Class,
        "struct" => Struct,
        "enum" => Enum,
        "trait" => Trait,
        "interface" | "protocol" => Interface,
        "type" | "typedef" | "alias" => Type,
        "module" | "package" | "namespace" | "crate" => Module,
        "constant" | "const" => Constant,
        "variable" | "var" | "global" => Variable,
        "field" | "attribute" | "property" | "member" => Field,
        "macro" => Macro,
        "impl" => return Some(None),
        _ => return None,
    };
    Some(Some(kind))
}

/// Classifies `gap` into the query of a targeted retrieval. Total: every input gets a query,
/// [`GapQuery::Fuzzy`] with the cleaned text when nothing more specific fits.
pub fn classify_gap(gap: &str) -> GapQuery {
    // Backticks say "this is code" even when they wrap the whole gap.
    let code_marked = gap.contains('`');
    let text = clean_item(gap);
    let text = text.trim_end_matches(['?', '!']).trim().to_owned();
    if let Some(query) = symbol_in_path(&text) {
        return query;
    }
    if let Some(query) = target(&text, code_marked) {
        return query;
    }
    GapQuery::Fuzzy(text)
}

/// "X in P", "X from P", "X (P)", "P::X", "P: X", "P#X".
fn symbol_in_path(text: &str) -> Option<GapQuery> {
    // ASCII lowercasing keeps byte offsets valid in `text`.
    let lower = text.to_ascii_lowercase();
    // The last separator wins: "the code in charge of logging in src/log.rs".
    for separator in [
        " defined in ",
        " in ",
        " from ",
        " inside ",
        " within ",
        " under ",
    ] {
        if let Some(at) = lower.rfind(separator) {
            let (left, right) = (&text[..at], &text[at + separator.len()..]);
            if let Some(query) = split_target(left, right) {
                return Some(query);
            }
        }
    }
    if let Some(inner) = text.strip_suffix(')') {
        if let Some(open) = inner.rfind('(') {
            let (left, right) = (&inner[..open], &inner[open + 1..]);
            let right = right
                .trim()
                .trim_start_matches("in ")
                .trim_start_matches("from ");
            if !left.trim().is_empty() && is_path(strip_wrapping(right)) {
                return split_target(left, right);
            }
        }
    }
    for separator in ["::", ": ", "#"] {
        if let Some(at) = text.find(separator) {
            let (path, symbol) = (&text[..at], &text[at + separator.len()..]);
            let path = strip_wrapping(path);
            if is_file(path) && !symbol.contains(char::is_whitespace) {
                if let Some((name, _)) = symbol_name(symbol, true) {
                    return Some(GapQuery::SymbolInPath {
                        symbol: name,
                        path: path.to_owned(),
                    });
                }
            }
        }
    }
    None
}

/// Reads "left in right" where right should be a path (or an enclosing symbol).
fn split_target(left: &str, right: &str) -> Option<GapQuery> {
    let right_words: Vec<&str> = right.split_whitespace().collect();
    let right_words = strip_leading(&right_words);
    let (path_words, container_kind) = match right_words {
        [kind, rest @ ..] if is_container_word(kind) => (rest, true),
        [rest @ .., kind] if is_container_word(kind) => (rest, true),
        words => (words, false),
    };
    let [path] = path_words else {
        return None;
    };
    let path = strip_wrapping(path.trim_end_matches([',', '.', ';']));
    let symbol = symbol_name_words(left);
    if is_path(path) || (symbol.is_some() && is_loose_path(path)) {
        let left = collapse_whitespace(left);
        return Some(match symbol {
            Some((name, _)) => GapQuery::SymbolInPath {
                symbol: name,
                path: path.to_owned(),
            },
            None if left.is_empty() => GapQuery::Path(path.to_owned()),
            None => GapQuery::TopicInPath {
                topic: left,
                path: path.to_owned(),
            },
        });
    }
    // "verify_user in the auth module", "verify_user in `AuthService`".
    let (name, _) = symbol?;
    let container_code_like = is_identifier(path) && (container_kind || is_code_like(path));
    let written_as_code = right.contains('`');
    if container_code_like || (written_as_code && is_identifier(path)) {
        let mut segments = vec![path.to_owned()];
        segments.extend(split_qualified(&name).unwrap_or_else(|| vec![name.clone()]));
        return Some(GapQuery::Qualified { path: segments });
    }
    None
}

fn is_container_word(word: &str) -> bool {
    matches!(
        word.to_lowercase().as_str(),
        "file"
            | "module"
            | "class"
            | "struct"
            | "trait"
            | "impl"
            | "crate"
            | "package"
            | "namespace"
            | "directory"
            | "folder"
            | "object"
            | "enum"
            | "interface"
    )
}

/// A single target: a path, a qualified name or a symbol, with kind and filler words.
fn target(text: &str, code_marked: bool) -> Option<GapQuery> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let words = strip_leading(&words);
    let is_file_word = |w: &str| w.eq_ignore_ascii_case("file");
    let (kind, name) = match words {
        [name] => (None, *name),
        [file, name] | [name, file] if is_file_word(file) => {
            let bare = strip_wrapping(name);
            return is_path(bare).then(|| GapQuery::Path(bare.to_owned()));
        }
        [kind, name] if kind_word(kind).is_some() => (kind_word(kind).flatten(), *name),
        [name, kind] if kind_word(kind).is_some() => (kind_word(kind).flatten(), *name),
        [name, filler] if TRAILING_FILLER.contains(&filler.to_lowercase().as_str()) => {
            (None, *name)
        }
        [kind, name, filler]
            if kind_word(kind).is_some()
                && TRAILING_FILLER.contains(&filler.to_lowercase().as_str()) =>
        {
            (kind_word(kind).flatten(), *name)
        }
        _ => return None,
    };
    let name = name.strip_suffix("'s").unwrap_or(name);
    let bare = strip_wrapping(name);
    if is_path(bare) {
        return Some(GapQuery::Path(bare.to_owned()));
    }
    let named_kind = kind.is_some() || words.len() > 1 || code_marked;
    let (name, called) = symbol_name(name, named_kind)?;
    if let Some(segments) = split_qualified(&name) {
        return Some(GapQuery::Qualified { path: segments });
    }
    let kind = kind.or(called.then_some(SymbolKind::Function));
    Some(GapQuery::Symbol { name, kind })
}

/// Drops leading filler ("the definition of", "the").
fn strip_leading<'a, 'b>(mut words: &'b [&'a str]) -> &'b [&'a str] {
    'outer: loop {
        for filler in LEADING_FILLER {
            if words.len() > filler.len()
                && words
                    .iter()
                    .zip(filler.iter())
                    .all(|(w, f)| w.eq_ignore_ascii_case(f))
            {
                words = &words[filler.len()..];
                continue 'outer;
            }
        }
        return words;
    }
}

/// The symbol named by the words left of "in": "function verify_user", "the `X` class",
/// "Type::method", "foo()", or any single identifier ("login in auth.py").
fn symbol_name_words(left: &str) -> Option<(String, bool)> {
    let words: Vec<&str> = left.split_whitespace().collect();
    let single_word = strip_leading(&words).len() == 1;
    match target(left, left.contains('`') || single_word)? {
        GapQuery::Symbol { name, .. } => Some((name, true)),
        GapQuery::Qualified { path } => Some((path.join(qualified_separator(left)), true)),
        _ => None,
    }
}

fn qualified_separator(text: &str) -> &'static str {
    if text.contains("::") {
        "::"
    } else if text.contains('#') {
        "#"
    } else {
        "."
    }
}

/// Reads one token as a symbol name: wrapping quotes and a trailing `(...)` removed. Plain
/// words count only when `named` (a kind word or backticks said it is code) or code-like.
/// Returns the name and whether it was written as a call.
fn symbol_name(token: &str, named: bool) -> Option<(String, bool)> {
    let backticked = token.contains('`');
    let mut name = strip_wrapping(token);
    let mut called = false;
    if let Some(open) = name.find('(') {
        if name.ends_with(')') {
            name = &name[..open];
            called = true;
        }
    }
    let name = strip_wrapping(name)
        .trim_matches('`')
        .trim_start_matches("::");
    let qualified = split_qualified(name).is_some();
    if !(qualified || is_identifier(name)) {
        return None;
    }
    if qualified || named || backticked || called || is_code_like(name) {
        Some((name.to_owned(), called))
    } else {
        None
    }
}

/// Splits `a::b`, `a.b.c`, `A#b` or `a->b` into segments of identifiers (at least two).
fn split_qualified(name: &str) -> Option<Vec<String>> {
    let name = name.trim_start_matches("::");
    let separator = ["::", "->", "#", "."]
        .into_iter()
        .find(|s| name.contains(s))?;
    let segments: Vec<String> = name.split(separator).map(str::to_owned).collect();
    (segments.len() >= 2 && segments.iter().all(|s| is_identifier(s))).then_some(segments)
}

/// A programming identifier: a letter, `_` or `$`, then letters, digits, `_` or `$`.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

/// An identifier no English word looks like: an underscore, a lower-to-upper case change
/// (`verifyUser`, `VerifyUser`) or a digit after a letter (`sha256`).
fn is_code_like(s: &str) -> bool {
    if !is_identifier(s) {
        return false;
    }
    let chars: Vec<char> = s.chars().collect();
    s.contains('_')
        || s.contains('$')
        || chars.windows(2).any(|w| {
            (w[0].is_lowercase() && w[1].is_uppercase())
                || (w[0].is_alphabetic() && w[1].is_ascii_digit())
        })
}

/// A file name with a known extension (`auth.py`, `src/lib.rs`) or a well-known bare file.
fn is_file(s: &str) -> bool {
    if s.is_empty() || s.contains(char::is_whitespace) || s.contains("://") {
        return false;
    }
    let file = s.rsplit(['/', '\\']).next().unwrap_or(s);
    if BARE_FILES.contains(&file) {
        return true;
    }
    match file.rsplit_once('.') {
        Some((stem, ext)) => {
            EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
                && (!stem.is_empty() || ext == "env")
                && s.chars().all(is_path_char)
        }
        None => false,
    }
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '/' | '\\' | '.' | '_' | '-' | '@' | '+' | '~' | '*')
}

/// A file (see [`is_file`]) or a directory path that prose does not look like: `src/auth/`,
/// `crates/crag-core`, `./x`, `a/b/c`.
fn is_path(s: &str) -> bool {
    if is_file(s) {
        return true;
    }
    if !is_loose_path(s) {
        return false;
    }
    let first = s.split(['/', '\\']).next().unwrap_or("");
    s.ends_with(['/', '\\'])
        || s.starts_with(['.', '/', '~'])
        || s.matches(['/', '\\']).count() >= 2
        || COMMON_DIRS.contains(&first)
        || s.contains(['_', '-', '.'])
}

/// Any slash-separated token of path characters.
fn is_loose_path(s: &str) -> bool {
    !s.is_empty()
        && !s.contains("://")
        && s.contains(['/', '\\'])
        && s.chars().all(is_path_char)
        && s.chars().any(char::is_alphanumeric)
}

#[cfg(test)]
mod tests;
