//! References: the calls, type uses and imports of a file, each placed in its piece and its
//! innermost definition.

use std::collections::HashSet;

use crag_core::{ReferenceKind, SymbolRef};
use tree_sitter::Node;

use crate::lang::Language;
use crate::pieces::Built;

/// Longest qualifier kept (`a.b.c` of `a.b.c.f()`), in bytes.
const MAX_QUALIFIER_BYTES: usize = 80;

/// Names never worth a reference.
const SKIPPED: &[&str] = &["self", "Self", "super", "crate", "this", "cls", "_"];

fn text<'a>(node: Node, source: &'a str) -> &'a str {
    source.get(node.byte_range()).unwrap_or_default()
}

fn field<'t>(node: Node<'t>, name: &str) -> Option<Node<'t>> {
    node.child_by_field_name(name)
}

fn qualifier(node: Option<Node>, source: &str) -> Option<String> {
    let q = text(node?, source).trim();
    (!q.is_empty() && q.len() <= MAX_QUALIFIER_BYTES && !q.contains(['\n', '(', '"']))
        .then(|| q.to_owned())
}

/// A name referenced at a node.
struct Found {
    at: usize,
    name: String,
    qualifier: Option<String>,
    kind: ReferenceKind,
}

/// Every reference of the tree under `root`.
pub(crate) fn collect(
    language: Language,
    root: Node,
    source: &str,
    built: &Built,
) -> Vec<(String, SymbolRef)> {
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        let skip_children = visit(language, node, source, &mut found);
        if !skip_children {
            for i in (0..node.named_child_count()).rev() {
                if let Some(child) = node.named_child(i) {
                    stack.push(child);
                }
            }
        }
    }
    found.sort_by_key(|f| f.at);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for f in found {
        let name = f.name.trim().to_owned();
        if name.is_empty() || SKIPPED.contains(&name.as_str()) {
            continue;
        }
        let Some((key, from)) = built.locate(f.at) else {
            continue;
        };
        if !seen.insert((key.to_owned(), name.clone(), f.qualifier.clone(), f.kind)) {
            continue;
        }
        let line = u32::try_from(source[..f.at].matches('\n').count() + 1).unwrap_or(u32::MAX);
        out.push((
            key.to_owned(),
            SymbolRef {
                name,
                qualifier: f.qualifier,
                from: from.map(str::to_owned),
                kind: f.kind,
                line,
            },
        ));
    }
    out
}

/// Records what `node` references; true when its children need no visit.
fn visit(language: Language, node: Node, source: &str, out: &mut Vec<Found>) -> bool {
    let mut add = |n: Node, name: &str, q: Option<String>, kind| {
        out.push(Found {
            at: n.start_byte(),
            name: name.to_owned(),
            qualifier: q,
            kind,
        });
    };
    match (language, node.kind()) {
        (_, "call_expression" | "call") => {
            if let Some(f) = field(node, "function") {
                callee(f, source, &mut add);
            }
        }
        (_, "new_expression") => {
            if let Some(c) = field(node, "constructor") {
                add(c, text(c, source), None, ReferenceKind::TypeUse);
            }
        }
        (_, "type_identifier") => {
            let parent = node.parent();
            let is_name = parent
                .and_then(|p| field(p, "name"))
                .is_some_and(|n| n.id() == node.id());
            let in_scoped = parent
                .is_some_and(|p| matches!(p.kind(), "scoped_type_identifier" | "qualified_type"));
            if !is_name && !in_scoped {
                add(node, text(node, source), None, ReferenceKind::TypeUse);
            }
        }
        (_, "scoped_type_identifier" | "qualified_type") => {
            if let Some(n) = field(node, "name") {
                let q = field(node, "path").or_else(|| field(node, "package"));
                add(
                    n,
                    text(n, source),
                    qualifier(q, source),
                    ReferenceKind::TypeUse,
                );
            }
            return true;
        }
        (Language::Rust, "use_declaration") => {
            if let Some(arg) = field(node, "argument") {
                rust_use(arg, None, source, &mut add);
            }
            return true;
        }
        (Language::Python, "class_definition") => {
            if let Some(bases) = field(node, "superclasses") {
                for i in 0..bases.named_child_count() {
                    if let Some(b) = bases.named_child(i) {
                        if matches!(b.kind(), "identifier" | "attribute") {
                            let name = text(b, source).rsplit('.').next().unwrap_or_default();
                            add(b, name, None, ReferenceKind::TypeUse);
                        }
                    }
                }
            }
        }
        (Language::Python, "import_from_statement") => {
            let module = qualifier(field(node, "module_name"), source);
            let mut cursor = node.walk();
            for n in node.children_by_field_name("name", &mut cursor) {
                let target = if n.kind() == "aliased_import" {
                    field(n, "name").unwrap_or(n)
                } else {
                    n
                };
                let name = text(target, source).rsplit('.').next().unwrap_or_default();
                add(n, name, module.clone(), ReferenceKind::Import);
            }
            return true;
        }
        (Language::Python, "import_statement") => {
            let mut cursor = node.walk();
            for n in node.children_by_field_name("name", &mut cursor) {
                let target = if n.kind() == "aliased_import" {
                    field(n, "name").unwrap_or(n)
                } else {
                    n
                };
                let full = text(target, source);
                let (q, name) = full
                    .rsplit_once('.')
                    .map_or((None, full), |(q, n)| (Some(q), n));
                add(n, name, q.map(str::to_owned), ReferenceKind::Import);
            }
            return true;
        }
        (Language::TypeScript | Language::Tsx | Language::JavaScript, "import_statement") => {
            let from = field(node, "source")
                .map(|s| text(s, source).trim_matches(['"', '\'', '`']).to_owned());
            script_imports(node, from.as_deref(), source, &mut add);
            return true;
        }
        (Language::Go, "import_spec") => {
            if let Some(p) = field(node, "path") {
                let path = text(p, source).trim_matches(['"', '`']);
                let (q, name) = path
                    .rsplit_once('/')
                    .map_or((None, path), |(q, n)| (Some(q), n));
                add(p, name, q.map(str::to_owned), ReferenceKind::Import);
            }
            return true;
        }
        _ => {}
    }
    false
}

/// The callee of a call: `f`, `a.f`, `A::f`, `a->f`, generic wrappers.
fn callee(f: Node, source: &str, add: &mut impl FnMut(Node, &str, Option<String>, ReferenceKind)) {
    match f.kind() {
        "identifier" => add(f, text(f, source), None, ReferenceKind::Call),
        "field_expression" => {
            if let Some(n) = field(f, "field") {
                add(
                    n,
                    text(n, source),
                    qualifier(field(f, "value"), source),
                    ReferenceKind::Call,
                );
            }
        }
        "scoped_identifier" => {
            if let Some(n) = field(f, "name") {
                add(
                    n,
                    text(n, source),
                    qualifier(field(f, "path"), source),
                    ReferenceKind::Call,
                );
            }
        }
        "attribute" => {
            if let Some(n) = field(f, "attribute") {
                add(
                    n,
                    text(n, source),
                    qualifier(field(f, "object"), source),
                    ReferenceKind::Call,
                );
            }
        }
        "member_expression" => {
            if let Some(n) = field(f, "property") {
                add(
                    n,
                    text(n, source),
                    qualifier(field(f, "object"), source),
                    ReferenceKind::Call,
                );
            }
        }
        "selector_expression" => {
            if let Some(n) = field(f, "field") {
                add(
                    n,
                    text(n, source),
                    qualifier(field(f, "operand"), source),
                    ReferenceKind::Call,
                );
            }
        }
        "generic_function" => {
            if let Some(inner) = field(f, "function") {
                callee(inner, source, add);
            }
        }
        _ => {}
    }
}

/// The names a Rust `use` brings in, with their paths.
fn rust_use(
    node: Node,
    prefix: Option<&str>,
    source: &str,
    add: &mut impl FnMut(Node, &str, Option<String>, ReferenceKind),
) {
    let join = |p: Option<&str>, q: Option<&str>| match (p, q) {
        (Some(p), Some(q)) => Some(format!("{p}::{q}")),
        (p, q) => p.or(q).map(str::to_owned),
    };
    match node.kind() {
        "identifier" | "type_identifier" => add(
            node,
            text(node, source),
            prefix.map(str::to_owned),
            ReferenceKind::Import,
        ),
        "scoped_identifier" => {
            if let Some(n) = field(node, "name") {
                let path = field(node, "path").map(|p| text(p, source));
                add(
                    n,
                    text(n, source),
                    join(prefix, path),
                    ReferenceKind::Import,
                );
            }
        }
        "scoped_use_list" => {
            let path = field(node, "path").map(|p| text(p, source));
            let inner = join(prefix, path);
            if let Some(list) = field(node, "list") {
                rust_use(list, inner.as_deref(), source, add);
            }
        }
        "use_list" => {
            for i in 0..node.named_child_count() {
                if let Some(item) = node.named_child(i) {
                    rust_use(item, prefix, source, add);
                }
            }
        }
        "use_as_clause" => {
            if let Some(path) = field(node, "path") {
                rust_use(path, prefix, source, add);
            }
        }
        _ => {}
    }
}

/// The names a TypeScript / JavaScript `import` brings in.
fn script_imports(
    node: Node,
    from: Option<&str>,
    source: &str,
    add: &mut impl FnMut(Node, &str, Option<String>, ReferenceKind),
) {
    for i in 0..node.named_child_count() {
        let Some(child) = node.named_child(i) else {
            continue;
        };
        match child.kind() {
            "import_specifier" => {
                if let Some(n) = field(child, "name") {
                    add(
                        n,
                        text(n, source),
                        from.map(str::to_owned),
                        ReferenceKind::Import,
                    );
                }
            }
            "identifier" if node.kind() == "import_clause" => {
                add(
                    child,
                    text(child, source),
                    from.map(str::to_owned),
                    ReferenceKind::Import,
                );
            }
            "import_clause" | "named_imports" => script_imports(child, from, source, add),
            _ => {}
        }
    }
}
