use super::*;

fn symbol_in_path(symbol: &str, path: &str) -> GapQuery {
    GapQuery::SymbolInPath {
        symbol: symbol.into(),
        path: path.into(),
    }
}

fn symbol(name: &str, kind: Option<SymbolKind>) -> GapQuery {
    GapQuery::Symbol {
        name: name.into(),
        kind,
    }
}

fn qualified(path: &[&str]) -> GapQuery {
    GapQuery::Qualified {
        path: path.iter().map(|s| s.to_string()).collect(),
    }
}

fn fuzzy(text: &str) -> GapQuery {
    GapQuery::Fuzzy(text.into())
}

#[test]
fn gaps_are_classified() {
    use SymbolKind::*;
    let cases: Vec<(&str, GapQuery)> = vec![
        // A symbol in a file.
        (
            "verify_user in auth.py",
            symbol_in_path("verify_user", "auth.py"),
        ),
        ("`foo` in src/lib.rs", symbol_in_path("foo", "src/lib.rs")),
        ("`foo` in `src/lib.rs`", symbol_in_path("foo", "src/lib.rs")),
        (
            "function verify_user in auth/service.py",
            symbol_in_path("verify_user", "auth/service.py"),
        ),
        (
            "the `verify_user` function in auth.py",
            symbol_in_path("verify_user", "auth.py"),
        ),
        (
            "ClassName in some/module.py",
            symbol_in_path("ClassName", "some/module.py"),
        ),
        (
            "class Session in the file session.py",
            symbol_in_path("Session", "session.py"),
        ),
        (
            "verify_user() from auth.py",
            symbol_in_path("verify_user", "auth.py"),
        ),
        (
            "verify_user defined in auth.py",
            symbol_in_path("verify_user", "auth.py"),
        ),
        (
            "Type::method in src/lib.rs",
            symbol_in_path("Type::method", "src/lib.rs"),
        ),
        (
            "verify_user (auth.py)",
            symbol_in_path("verify_user", "auth.py"),
        ),
        (
            "verify_user (in auth/service.py)",
            symbol_in_path("verify_user", "auth/service.py"),
        ),
        (
            "tests/test_auth.py::test_login",
            symbol_in_path("test_login", "tests/test_auth.py"),
        ),
        (
            "auth.py: verify_user",
            symbol_in_path("verify_user", "auth.py"),
        ),
        ("login in auth.py", symbol_in_path("login", "auth.py")),
        (
            "verify_user in auth/service",
            symbol_in_path("verify_user", "auth/service"),
        ),
        // A topic in a file.
        (
            "how errors are logged in src/log.rs",
            GapQuery::TopicInPath {
                topic: "how errors are logged".into(),
                path: "src/log.rs".into(),
            },
        ),
        // Qualified names.
        ("Type::method", qualified(&["Type", "method"])),
        (
            "module.Class.method",
            qualified(&["module", "Class", "method"]),
        ),
        (
            "`crate::config::load`",
            qualified(&["crate", "config", "load"]),
        ),
        (
            "the SessionStore.create method",
            qualified(&["SessionStore", "create"]),
        ),
        ("os.path", qualified(&["os", "path"])),
        ("User#authenticate", qualified(&["User", "authenticate"])),
        (
            "verify_user in the auth module",
            qualified(&["auth", "verify_user"]),
        ),
        (
            "create in `SessionStore`",
            qualified(&["SessionStore", "create"]),
        ),
        (
            "create in class SessionStore",
            qualified(&["SessionStore", "create"]),
        ),
        // Symbols.
        (
            "function verify_user",
            symbol("verify_user", Some(Function)),
        ),
        ("fn parse_config", symbol("parse_config", Some(Function))),
        ("def login", symbol("login", Some(Function))),
        ("class Y", symbol("Y", Some(Class))),
        ("the `X` function", symbol("X", Some(Function))),
        ("the Session class", symbol("Session", Some(Class))),
        ("struct Config", symbol("Config", Some(Struct))),
        ("trait Storage", symbol("Storage", Some(Trait))),
        ("enum Verdict", symbol("Verdict", Some(Enum))),
        (
            "the CGRAG_MAX_PASSES constant",
            symbol("CGRAG_MAX_PASSES", Some(Constant)),
        ),
        ("macro vec", symbol("vec", Some(Macro))),
        ("verify_user", symbol("verify_user", None)),
        ("VerifyUser", symbol("VerifyUser", None)),
        ("verifyUser", symbol("verifyUser", None)),
        ("`session`", symbol("session", None)),
        ("run()", symbol("run", Some(Function))),
        (
            "`create_session()`",
            symbol("create_session", Some(Function)),
        ),
        ("the definition of verify_user", symbol("verify_user", None)),
        ("verify_user implementation", symbol("verify_user", None)),
        (
            "the implementation of the Session class",
            symbol("Session", Some(Class)),
        ),
        ("sha256", symbol("sha256", None)),
        // Paths.
        ("src/auth/mod.rs", GapQuery::Path("src/auth/mod.rs".into())),
        ("auth.py", GapQuery::Path("auth.py".into())),
        ("the file config.yaml", GapQuery::Path("config.yaml".into())),
        ("Cargo.toml file", GapQuery::Path("Cargo.toml".into())),
        (
            "crates/crag-core/",
            GapQuery::Path("crates/crag-core/".into()),
        ),
        ("`Makefile`", GapQuery::Path("Makefile".into())),
        ("./scripts/run", GapQuery::Path("./scripts/run".into())),
        // Fuzzy.
        ("how errors are logged", fuzzy("how errors are logged")),
        ("the file that handles X", fuzzy("the file that handles X")),
        ("logging", fuzzy("logging")),
        ("Session", fuzzy("Session")),
        ("and/or", fuzzy("and/or")),
        ("errors in production", fuzzy("errors in production")),
        ("verify_user in Python", fuzzy("verify_user in Python")),
        ("the config file", fuzzy("the config file")),
        (
            "where the token is checked?",
            fuzzy("where the token is checked"),
        ),
        (
            "https://example.com/a.py",
            fuzzy("https://example.com/a.py"),
        ),
        ("1.2.3", fuzzy("1.2.3")),
        ("", fuzzy("")),
        ("   ", fuzzy("")),
    ];
    let mut failures = Vec::new();
    for (gap, expected) in &cases {
        let got = classify_gap(gap);
        if &got != expected {
            failures.push(format!("{gap:?}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases.len() >= 25);
}

#[test]
fn list_markers_and_quotes_do_not_change_the_class() {
    assert_eq!(
        classify_gap("- \"verify_user in auth.py\"."),
        symbol_in_path("verify_user", "auth.py")
    );
    assert_eq!(
        classify_gap("2) **Type::method**"),
        qualified(&["Type", "method"])
    );
}

#[test]
fn only_fuzzy_is_unspecific() {
    assert!(classify_gap("verify_user").is_specific());
    assert!(classify_gap("src/lib.rs").is_specific());
    assert!(!classify_gap("how errors are logged").is_specific());
}

#[test]
fn queries_serialise_with_a_type_tag() {
    let json = serde_json::to_value(classify_gap("function verify_user")).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"type": "symbol", "name": "verify_user", "kind": "function"})
    );
}
