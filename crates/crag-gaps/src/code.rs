//! The LLM-free gap detection over text: in code context, functions and types that are used
//! but defined nowhere in the context are what is missing ("I see `verify_user` called but not
//! its definition"). Prose gives no gaps. A lexical approximation of the symbol graph: calls are
//! `name(`, uses of types `Name::` / `Name {`, definitions the usual keywords of Rust, Python, Go
//! and TypeScript.

use std::collections::{HashMap, HashSet};

/// Most gaps [`code_gaps`] names per pass.
pub const MAX_CODE_GAPS: usize = 5;

/// Keywords that introduce a definition of the name after them.
const DEFINERS: &[&str] = &[
    "fn",
    "def",
    "class",
    "struct",
    "enum",
    "trait",
    "impl",
    "type",
    "interface",
    "func",
    "function",
    "const",
    "let",
    "var",
    "mod",
    "union",
];

/// Names that are language built-ins or keywords, never worth fetching.
const BUILTINS: &[&str] = &[
    "if",
    "for",
    "while",
    "match",
    "return",
    "loop",
    "switch",
    "catch",
    "with",
    "assert",
    "print",
    "println",
    "eprintln",
    "format",
    "write",
    "writeln",
    "vec",
    "panic",
    "len",
    "range",
    "str",
    "int",
    "float",
    "list",
    "dict",
    "set",
    "tuple",
    "isinstance",
    "super",
    "self",
    "Self",
    "Some",
    "None",
    "Ok",
    "Err",
    "Box",
    "Vec",
    "String",
    "Option",
    "Result",
    "Arc",
    "Rc",
    "HashMap",
    "HashSet",
    "BTreeMap",
    "new",
    "clone",
    "into",
    "from",
    "iter",
    "map",
    "unwrap",
    "expect",
    "collect",
    "push",
    "get",
    "insert",
    "append",
    "join",
    "split",
    "to_string",
    "as_str",
    "make",
    "append",
    "fmt",
    "sizeof",
    "typeof",
    "require",
    "import",
    "console",
    "log",
    "open",
    "sorted",
    "enumerate",
    "zip",
    "min",
    "max",
    "sum",
    "abs",
    "bool",
    "char",
    "u8",
    "u32",
    "u64",
    "usize",
    "i32",
    "i64",
    "f32",
    "f64",
    "matches",
    "todo",
    "unreachable",
    "await",
    "async",
    "not",
    "and",
    "or",
    "in",
    "is",
    "lambda",
    "yield",
    "try",
    "except",
    "raise",
    "elif",
    "else",
    "then",
    "do",
    "defer",
    "go",
    "chan",
    "select",
    "case",
    "new",
    "delete",
    "this",
    "error",
    "errors",
    "Error",
    "Exception",
    "Object",
    "Array",
    "Promise",
    "JSON",
    "Math",
    "Date",
    "Number",
    "Boolean",
    "Symbol",
    "Map",
    "Set",
    "Debug",
    "Clone",
    "Default",
    "PartialEq",
    "Eq",
    "Hash",
    "Serialize",
    "Deserialize",
    "derive",
    "cfg",
    "test",
];

/// Whether `text` reads as source code rather than prose.
fn looks_like_code(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return false;
    }
    let codey = lines
        .iter()
        .filter(|l| {
            let t = l.trim();
            t.ends_with(';')
                || t.ends_with('{')
                || t.ends_with('}')
                || t.ends_with(':') && t.starts_with(|c: char| c.is_ascii_lowercase())
                || DEFINERS.iter().any(|d| t.starts_with(&format!("{d} ")))
                || t.starts_with("pub ")
                || t.starts_with("return ")
        })
        .count();
    codey * 3 >= lines.len()
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifiers of `text` with the byte offset after each.
fn identifiers(text: &str) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (is_ident_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((&text[s..i], i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((&text[s..], text.len()));
    }
    out.retain(|(w, _)| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'));
    out
}

/// `text` without comments (`//`, `#`, `--` to the end of the line) and string literals, so
/// that words in them are not taken for calls.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('*') || trimmed.starts_with("/*") {
            out.push('\n');
            continue;
        }
        let mut in_string: Option<char> = None;
        let mut previous = ' ';
        for c in line.chars() {
            match in_string {
                Some(q) => {
                    if c == q && previous != '\\' {
                        in_string = None;
                    }
                }
                None if c == '"' || c == '\'' && !previous.is_alphanumeric() => in_string = Some(c),
                None if c == '#' || (c == '/' && previous == '/') => {
                    if c == '/' {
                        out.pop();
                    }
                    break;
                }
                None => out.push(c),
            }
            previous = c;
        }
        out.push('\n');
    }
    out
}

/// Names defined and names used in one piece of code.
fn scan(text: &str) -> (HashSet<String>, Vec<String>) {
    let code = code_only(text);
    let text = code.as_str();
    let ids = identifiers(text);
    let mut defined = HashSet::new();
    let mut used = Vec::new();
    for (i, (word, end)) in ids.iter().enumerate() {
        if DEFINERS.contains(word) {
            if let Some((name, _)) = ids.get(i + 1) {
                defined.insert((*name).to_owned());
            }
            continue;
        }
        // Calls are written `name(`, without a space (prose writes "word (aside)").
        let rest = &text[*end..];
        let called = rest.starts_with('(') || rest.starts_with("::<");
        let path = rest.starts_with("::") && word.starts_with(|c: char| c.is_ascii_uppercase());
        let previous = i.checked_sub(1).map(|p| ids[p].0);
        let after_dot = text[..end - word.len()].trim_end().ends_with('.');
        // Method calls on values (`x.len()`) name nothing findable on their own.
        if (called || path) && !after_dot && previous.is_none_or(|p| !DEFINERS.contains(&p)) {
            used.push((*word).to_owned());
        }
    }
    (defined, used)
}

/// Gaps of the context whose texts are `context`: names used in its code and defined nowhere
/// in it, most used first, leaving out `known_missing` and built-ins. Texts that read as prose
/// give no gaps.
pub fn code_gaps<'a>(
    context: impl IntoIterator<Item = &'a str>,
    known_missing: &[String],
) -> Vec<String> {
    let mut defined = HashSet::new();
    let mut uses: HashMap<String, (usize, usize)> = HashMap::new();
    let mut order = 0;
    for text in context.into_iter().filter(|t| looks_like_code(t)) {
        let (d, u) = scan(text);
        defined.extend(d);
        for name in u {
            order += 1;
            uses.entry(name).or_insert((0, order)).0 += 1;
        }
    }
    let missing: HashSet<String> = known_missing.iter().map(|m| m.to_lowercase()).collect();
    let mut gaps: Vec<(String, (usize, usize))> = uses
        .into_iter()
        .filter(|(name, _)| {
            !defined.contains(name)
                && !BUILTINS.contains(&name.as_str())
                && name.len() > 2
                && !missing.contains(&name.to_lowercase())
        })
        .collect();
    gaps.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
    gaps.into_iter()
        .take(MAX_CODE_GAPS)
        .map(|(name, _)| name)
        .collect()
}

/// Whether `name` is a language built-in or keyword, never worth fetching.
pub fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(text: &str) -> &str {
        text
    }

    #[test]
    fn called_but_undefined_names_are_gaps() {
        let context = [item(
            "def login(request):\n    user = verify_user(request.name, request.password)\n    token = issue_token(user)\n    return token\n",
        )];
        assert_eq!(code_gaps(context, &[]), vec!["verify_user", "issue_token"]);
        // Defined elsewhere in the context: no longer missing.
        let more = [
            context[0],
            item("def verify_user(name, password):\n    return db.check(name, password)\n"),
        ];
        assert_eq!(code_gaps(more, &[]), vec!["issue_token"]);
        // Known to be missing: not asked again.
        assert!(code_gaps(context, &["VERIFY_USER".into(), "issue_token".into()]).is_empty());
    }

    #[test]
    fn rust_paths_and_calls_count_methods_and_builtins_do_not() {
        let context = [item(
            "pub fn run(config: &Config) -> Result<()> {\n    let store = SessionStore::open(&config.path)?;\n    let n = store.len();\n    println!(\"{n}\");\n    sweep(store, Duration::from_secs(30));\n    Ok(())\n}\n",
        )];
        let gaps = code_gaps(context, &[]);
        assert!(gaps.contains(&"SessionStore".to_owned()), "{gaps:?}");
        assert!(gaps.contains(&"sweep".to_owned()), "{gaps:?}");
        assert!(!gaps.contains(&"len".to_owned()), "{gaps:?}");
        assert!(!gaps.contains(&"println".to_owned()), "{gaps:?}");
        assert!(!gaps.contains(&"run".to_owned()), "{gaps:?}");
    }

    #[test]
    fn comments_strings_and_spaced_parentheses_are_not_calls() {
        let context = [item(
            "/// Stops when nothing is missing (no gaps) or passes run out.\npub fn stop(x: u32) -> bool {\n    // retries (at most) three times\n    let s = \"call_me(now)\";\n    check_limit(x) # trailing\n}\n",
        )];
        assert_eq!(code_gaps(context, &[]), vec!["check_limit"]);
    }

    #[test]
    fn prose_has_no_gaps_and_odd_text_does_not_panic() {
        let prose = [item(
            "The verdict (correct, ambiguous or incorrect) decides the correction. See retrieve() for details.",
        )];
        assert!(code_gaps(prose, &[]).is_empty());
        for text in ["", "(", "::", "fn", "é(ü)", "a(((((", "fn (", "x::y::z("] {
            let _ = code_gaps([item(text)], &[]);
        }
    }
}
