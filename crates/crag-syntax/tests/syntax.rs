//! Syntax-aware chunking and symbol extraction on small files of each language.

mod fixtures;

use crag_core::{ReferenceKind, SymbolKind};
use crag_syntax::{parse_file, Language, ParsedFile, SyntaxError, SyntaxLimits};
use proptest::prelude::*;

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

fn parse(path: &str, text: &str, max_tokens: usize) -> ParsedFile {
    let language = Language::from_path(path).expect("a known language");
    let limits = SyntaxLimits {
        max_tokens,
        count_tokens: &words,
    };
    parse_file(path, text, language, &limits).expect("parses")
}

fn keys(p: &ParsedFile) -> Vec<&str> {
    p.pieces.iter().map(|p| p.key.as_str()).collect()
}

fn piece<'a>(p: &'a ParsedFile, key: &str) -> &'a crag_syntax::CodePiece {
    p.pieces
        .iter()
        .find(|x| x.key == key)
        .unwrap_or_else(|| panic!("no piece {key} in {:?}", keys(p)))
}

fn has_ref(p: &ParsedFile, key: &str, name: &str, kind: ReferenceKind) -> bool {
    p.references
        .iter()
        .any(|(k, r)| k == key && r.name == name && r.kind == kind)
}

#[test]
fn rust_definitions_methods_docs_and_references() {
    let p = parse("crates/app/src/session.rs", fixtures::RUST, 200);
    assert_eq!(
        keys(&p),
        [
            "top~0",
            "TTL",
            "Session",
            "Session::open",
            "Session::is_valid",
            "normalise",
            "helpers::count"
        ]
    );
    let open = piece(&p, "Session::open");
    assert_eq!(open.meta.symbol_kind, SymbolKind::Method);
    assert_eq!(open.meta.qualified, "app::session::Session::open");
    assert_eq!(
        open.meta.signature,
        "pub fn open(user: &str, store: Store) -> Self"
    );
    assert!(
        open.text.starts_with("impl Session {"),
        "a bare impl line joins its first method"
    );
    assert!(open.text.contains("/// Opens a session"));
    let session = piece(&p, "Session");
    assert!(session
        .text
        .starts_with("/// A logged-in user.\n#[derive(Debug, Clone)]"));
    assert_eq!(session.meta.symbol_kind, SymbolKind::Struct);
    assert_eq!((session.line_start, session.line_end), (8, 13));
    assert_eq!(
        piece(&p, "helpers::count").meta.symbol_kind,
        SymbolKind::Function
    );

    let defs: Vec<(&str, SymbolKind)> = p
        .definitions
        .iter()
        .map(|(_, d)| (d.name.as_str(), d.kind))
        .collect();
    assert!(defs.contains(&("Session", SymbolKind::Impl)));
    assert!(defs.contains(&("normalise", SymbolKind::Function)));
    assert!(defs.contains(&("helpers", SymbolKind::Module)));
    assert!(has_ref(
        &p,
        "Session::open",
        "normalise",
        ReferenceKind::Call
    ));
    assert!(has_ref(&p, "Session", "Store", ReferenceKind::TypeUse));
    assert!(has_ref(&p, "top~0", "HashSet", ReferenceKind::Import));
    let call = p
        .references
        .iter()
        .find(|(_, r)| r.name == "expires_at")
        .expect("method call");
    assert_eq!(call.1.qualifier.as_deref(), Some("self.store"));
    assert_eq!(
        call.1.from.as_deref(),
        Some("app::session::Session::is_valid")
    );
}

#[test]
fn python_classes_decorators_docstrings_and_imports() {
    let p = parse("src/auth/users.py", fixtures::PYTHON, 200);
    assert_eq!(
        keys(&p),
        [
            "top~0",
            "UserStore",
            "UserStore::__init__",
            "UserStore::find",
            "login"
        ]
    );
    let find = piece(&p, "UserStore::find");
    assert!(find.text.starts_with("@cached"));
    assert_eq!(find.meta.qualified, "auth::users::UserStore::find");
    assert_eq!(find.meta.symbol_kind, SymbolKind::Method);
    assert!(piece(&p, "UserStore").text.contains("Keeps users."));
    assert!(has_ref(&p, "login", "issue_token", ReferenceKind::Call));
    assert!(has_ref(
        &p,
        "UserStore",
        "BaseStore",
        ReferenceKind::TypeUse
    ));
    let import = p
        .references
        .iter()
        .find(|(_, r)| r.name == "issue_token" && r.kind == ReferenceKind::Import)
        .expect("import");
    assert_eq!(import.1.qualifier.as_deref(), Some("auth.tokens"));
}

#[test]
fn typescript_javascript_and_go() {
    let ts = parse("web/search.ts", fixtures::TYPESCRIPT, 200);
    assert_eq!(
        keys(&ts),
        [
            "top~0",
            "Hit",
            "Hits",
            "Searcher::constructor",
            "Searcher::search",
            "rank",
            "score"
        ]
    );
    assert_eq!(piece(&ts, "Hit").meta.symbol_kind, SymbolKind::Interface);
    assert_eq!(piece(&ts, "score").meta.symbol_kind, SymbolKind::Function);
    assert!(has_ref(
        &ts,
        "Searcher::search",
        "rank",
        ReferenceKind::Call
    ));
    assert!(has_ref(&ts, "top~0", "Client", ReferenceKind::Import));

    let js = parse("web/load.js", fixtures::JAVASCRIPT, 200);
    assert!(keys(&js).contains(&"load") && keys(&js).contains(&"Cache::get"));
    assert!(has_ref(&js, "load", "readFile", ReferenceKind::Call));

    let go = parse("pkg/server/server.go", fixtures::GO, 200);
    assert_eq!(
        keys(&go),
        ["top~0", "Server", "Handler", "Server::Handle", "render"]
    );
    let handle = piece(&go, "Server::Handle");
    assert_eq!(handle.meta.qualified, "pkg::server::Server::Handle");
    assert_eq!(handle.meta.symbol_kind, SymbolKind::Method);
    assert_eq!(
        piece(&go, "Handler").meta.symbol_kind,
        SymbolKind::Interface
    );
    assert!(has_ref(
        &go,
        "Server::Handle",
        "render",
        ReferenceKind::Call
    ));
    assert!(has_ref(&go, "top~0", "http", ReferenceKind::Import));
}

#[test]
fn long_definitions_are_split_with_the_signature_repeated() {
    let body: String = (0..60)
        .map(|i| format!("    let v{i} = step(v, {i});\n"))
        .collect();
    let source = format!("/// Runs every step.\npub fn run(v: u32) -> u32 {{\n{body}    v\n}}\n");
    let p = parse("src/run.rs", &source, 50);
    let parts: Vec<_> = p.pieces.iter().filter(|x| x.meta.symbol == "run").collect();
    assert!(parts.len() >= 4, "{:?}", keys(&p));
    assert_eq!(parts[0].key, "run");
    assert_eq!(parts[1].key, "run~1");
    for (k, part) in parts.iter().enumerate() {
        assert_eq!(part.meta.part as usize, k);
        assert_eq!(part.meta.parts as usize, parts.len());
        assert!(words(&part.text) <= 50 + 1, "part {k} too long");
        if k > 0 {
            assert!(part.text.starts_with("pub fn run(v: u32) -> u32\n"));
        }
    }
    // The parts cover the body in order, without overlap.
    assert!(parts.windows(2).all(|w| w[0].byte_end <= w[1].byte_start));
    // One line longer than the limit stays one part.
    let wide = format!("fn wide() {{ {} }}\n", "x + ".repeat(200));
    let p = parse("src/wide.rs", &wide, 10);
    assert!(!p.pieces.is_empty());
}

#[test]
fn editing_one_function_changes_only_its_piece() {
    let before = parse("crates/app/src/session.rs", fixtures::RUST, 200);
    let edited = fixtures::RUST.replace(
        "user.trim().to_lowercase()",
        "let trimmed = user.trim();\n    trimmed.to_lowercase()",
    );
    let after = parse("crates/app/src/session.rs", &edited, 200);
    assert_eq!(keys(&before), keys(&after));
    let changed: Vec<&str> = before
        .pieces
        .iter()
        .zip(&after.pieces)
        .filter(|(a, b)| a.text != b.text)
        .map(|(a, _)| a.key.as_str())
        .collect();
    assert_eq!(changed, ["normalise"]);
}

#[test]
fn repeated_names_get_numbered_keys() {
    let source = "impl A {\n    fn f(&self) {}\n}\n\nimpl A {\n    fn f(&self, x: u8) {}\n}\n";
    let p = parse("src/a.rs", source, 200);
    assert_eq!(keys(&p), ["A::f", "A::f#2"]);
}

#[test]
fn unparsable_files_are_refused_and_empty_ones_are_empty() {
    let limits = SyntaxLimits {
        max_tokens: 100,
        count_tokens: &words,
    };
    assert!(parse_file("x.rs", "}}}} ((( @@@ !!!", Language::Rust, &limits).is_err());
    assert!(parse_file("x.py", "  \n", Language::Python, &limits)
        .unwrap()
        .pieces
        .is_empty());
}

#[test]
fn no_meaningful_line_is_lost() {
    for (path, source) in [
        ("crates/app/src/session.rs", fixtures::RUST),
        ("src/auth/users.py", fixtures::PYTHON),
        ("web/search.ts", fixtures::TYPESCRIPT),
        ("web/load.js", fixtures::JAVASCRIPT),
        ("pkg/server/server.go", fixtures::GO),
    ] {
        let p = parse(path, source, 200);
        for (n, line) in source.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.chars().all(|c| "{}()[];,".contains(c)) {
                continue;
            }
            let line_no = u32::try_from(n + 1).unwrap();
            assert!(
                p.pieces
                    .iter()
                    .any(|x| x.line_start <= line_no && line_no <= x.line_end),
                "{path}:{line_no} `{t}` is in no piece"
            );
        }
    }
}

/// 150 bytes found by the property test below on which tree-sitter-typescript 0.23's TSX
/// error recovery ran for 27 minutes and took 5 GB before it was stopped.
#[test]
fn runaway_parses_are_given_up() {
    let text =
        "{struct:\u{e9}implstruct    impl(#)(    //_c_    //):impl(funcstructimpldef{}{\n    \
                classstruct ::#impl({def\"def    (\":funcimpl)):#    impl";
    let limits = SyntaxLimits {
        max_tokens: 1,
        count_tokens: &words,
    };
    match parse_file("a.tsx", text, Language::Tsx, &limits) {
        Err(SyntaxError::TooComplex { language }) => assert_eq!(language, "tsx"),
        other => panic!("given up as too complex, not {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_text_parses_or_is_refused_without_panic(
        text in "(fn|def|class|impl|func|struct|\\{|\\}|\\(|\\)|:|\n|    |[a-z_]{1,6}| |é|//|#|\"){0,60}",
        lang in 0usize..6,
        max in 1usize..40,
    ) {
        let (path, language) = [
            ("a.rs", Language::Rust),
            ("a.py", Language::Python),
            ("a.ts", Language::TypeScript),
            ("a.tsx", Language::Tsx),
            ("a.js", Language::JavaScript),
            ("a.go", Language::Go),
        ][lang];
        let limits = SyntaxLimits { max_tokens: max, count_tokens: &words };
        if let Ok(p) = parse_file(path, &text, language, &limits) {
            for piece in &p.pieces {
                prop_assert!(piece.byte_start <= piece.byte_end && piece.byte_end <= text.len());
                prop_assert!(text.is_char_boundary(piece.byte_start) && text.is_char_boundary(piece.byte_end));
                prop_assert!(piece.line_start >= 1 && piece.line_start <= piece.line_end);
            }
            let mut keys: Vec<&str> = p.pieces.iter().map(|x| x.key.as_str()).collect();
            keys.sort_unstable();
            let n = keys.len();
            keys.dedup();
            prop_assert_eq!(keys.len(), n, "keys are unique");
        }
    }
}
