//! The languages and what their grammars call a definition.

use crag_core::SymbolKind;
use tree_sitter::Node;

/// A language with a grammar: the one list of the languages crag chunks by syntax, which the
/// filters' checks (`crag query --language`, `filters.languages`) name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::EnumIter)]
pub enum Language {
    /// Rust.
    Rust,
    /// Python.
    Python,
    /// TypeScript.
    TypeScript,
    /// TypeScript with JSX.
    Tsx,
    /// JavaScript (with JSX).
    JavaScript,
    /// Go.
    Go,
}

impl Language {
    /// The language of a file, by its extension.
    pub fn from_path(path: &str) -> Option<Self> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        Some(match ext.to_ascii_lowercase().as_str() {
            "rs" => Self::Rust,
            "py" | "pyi" => Self::Python,
            "ts" | "mts" | "cts" => Self::TypeScript,
            "tsx" => Self::Tsx,
            "js" | "mjs" | "cjs" | "jsx" => Self::JavaScript,
            "go" => Self::Go,
            _ => return None,
        })
    }

    /// Every language, in declaration order.
    pub fn all() -> impl Iterator<Item = Self> {
        <Self as strum::IntoEnumIterator>::iter()
    }

    /// The language of a name, as [`as_str`](Self::as_str) writes it.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::all().find(|l| l.as_str() == name)
    }

    /// The language's name: `rust`, `python`, `typescript`, `tsx`, `javascript`, `go`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Python => "python",
            Self::TypeScript => "typescript",
            Self::Tsx => "tsx",
            Self::JavaScript => "javascript",
            Self::Go => "go",
        }
    }

    pub(crate) fn grammar(self) -> tree_sitter::Language {
        match self {
            Self::Rust => tree_sitter_rust::LANGUAGE.into(),
            Self::Python => tree_sitter_python::LANGUAGE.into(),
            Self::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Self::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Self::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Self::Go => tree_sitter_go::LANGUAGE.into(),
        }
    }

    fn is_script(self) -> bool {
        matches!(self, Self::TypeScript | Self::Tsx | Self::JavaScript)
    }

    /// Whether `node` is a comment.
    pub(crate) fn is_comment(self, node: Node) -> bool {
        matches!(
            node.kind(),
            "comment" | "line_comment" | "block_comment" | "doc_comment"
        )
    }

    /// Whether `node` goes with the definition after it (an attribute or a decorator; doc
    /// comments are comments).
    pub(crate) fn is_attachment(self, node: Node) -> bool {
        self.is_comment(node)
            || matches!(
                node.kind(),
                "attribute_item" | "inner_attribute_item" | "decorator"
            )
    }
}

/// What a definition node is.
#[derive(Debug, Clone)]
pub(crate) struct DefShape<'t> {
    /// Its kind (functions inside containers become methods later).
    pub kind: SymbolKind,
    /// Its name.
    pub name: String,
    /// The node holding nested definitions (an impl's or a class's body), if it is a container.
    pub body: Option<Node<'t>>,
    /// Where the definition's own text starts (the node, or a wrapper such as `export`).
    pub outer: Node<'t>,
    /// Where the signature ends: the start of the body or block.
    pub signature_end: usize,
}

fn text<'a>(node: Node, source: &'a str) -> &'a str {
    source.get(node.byte_range()).unwrap_or_default()
}

fn field_text(node: Node, field: &str, source: &str) -> Option<String> {
    node.child_by_field_name(field)
        .map(|n| text(n, source).to_owned())
        .filter(|s| !s.is_empty())
}

/// The base name of a type written in an impl or a receiver (`Foo` of `&mut Foo<T>`).
fn type_name(raw: &str) -> String {
    let raw = raw.trim().trim_start_matches('&').trim_start_matches('*');
    let raw = raw.trim_start_matches("mut ").trim_start_matches("dyn ");
    let base = raw.split('<').next().unwrap_or(raw);
    let base = base.split('[').next().unwrap_or(base);
    base.rsplit("::").next().unwrap_or(base).trim().to_owned()
}

fn signature_end(node: Node, body_fields: &[&str]) -> usize {
    body_fields
        .iter()
        .find_map(|f| node.child_by_field_name(f))
        .map_or(node.end_byte(), |b| b.start_byte())
}

/// What `node` defines, if it is a definition of `language`.
// long: declarative table
pub(crate) fn shape<'t>(language: Language, node: Node<'t>, source: &str) -> Option<DefShape<'t>> {
    let def = |kind, name: Option<String>, body: Option<Node<'t>>| {
        name.map(|name| DefShape {
            kind,
            name,
            body,
            outer: node,
            signature_end: signature_end(node, &["body", "value"]),
        })
    };
    match (language, node.kind()) {
        (Language::Rust, "function_item" | "function_signature_item") => {
            def(SymbolKind::Function, field_text(node, "name", source), None)
        }
        (Language::Rust, "struct_item" | "union_item") => {
            def(SymbolKind::Struct, field_text(node, "name", source), None)
        }
        (Language::Rust, "enum_item") => {
            def(SymbolKind::Enum, field_text(node, "name", source), None)
        }
        (Language::Rust, "type_item") => {
            def(SymbolKind::Type, field_text(node, "name", source), None)
        }
        (Language::Rust, "const_item" | "static_item") => {
            def(SymbolKind::Constant, field_text(node, "name", source), None)
        }
        (Language::Rust, "macro_definition") => {
            def(SymbolKind::Function, field_text(node, "name", source), None)
        }
        (Language::Rust, "trait_item") => def(
            SymbolKind::Trait,
            field_text(node, "name", source),
            node.child_by_field_name("body"),
        ),
        (Language::Rust, "impl_item") => def(
            SymbolKind::Impl,
            field_text(node, "type", source).map(|t| type_name(&t)),
            node.child_by_field_name("body"),
        ),
        (Language::Rust, "mod_item") => {
            let body = node.child_by_field_name("body");
            body.and_then(|b| {
                def(
                    SymbolKind::Module,
                    field_text(node, "name", source),
                    Some(b),
                )
            })
        }
        (Language::Python, "function_definition") => {
            def(SymbolKind::Function, field_text(node, "name", source), None)
        }
        (Language::Python, "class_definition") => def(
            SymbolKind::Class,
            field_text(node, "name", source),
            node.child_by_field_name("body"),
        ),
        (Language::Python, "decorated_definition") => {
            let inner = node.child_by_field_name("definition")?;
            let mut s = shape(language, inner, source)?;
            s.outer = node;
            Some(s)
        }
        (l, "function_declaration" | "generator_function_declaration") if l.is_script() => {
            def(SymbolKind::Function, field_text(node, "name", source), None)
        }
        (l, "class_declaration" | "abstract_class_declaration" | "class") if l.is_script() => def(
            SymbolKind::Class,
            field_text(node, "name", source),
            node.child_by_field_name("body"),
        ),
        (l, "method_definition" | "abstract_method_signature") if l.is_script() => {
            def(SymbolKind::Method, field_text(node, "name", source), None)
        }
        (l, "interface_declaration") if l.is_script() => def(
            SymbolKind::Interface,
            field_text(node, "name", source),
            None,
        ),
        (l, "type_alias_declaration") if l.is_script() => {
            def(SymbolKind::Type, field_text(node, "name", source), None)
        }
        (l, "enum_declaration") if l.is_script() => {
            def(SymbolKind::Enum, field_text(node, "name", source), None)
        }
        (l, "internal_module" | "module") if l.is_script() => def(
            SymbolKind::Module,
            field_text(node, "name", source),
            node.child_by_field_name("body"),
        ),
        (l, "lexical_declaration" | "variable_declaration") if l.is_script() => {
            // `const f = (...) => ...` / `= function (...)`: a function named by its variable.
            let declarator = (0..node.named_child_count())
                .filter_map(|i| node.named_child(i))
                .find(|c| c.kind() == "variable_declarator")?;
            let value = declarator.child_by_field_name("value")?;
            if !matches!(
                value.kind(),
                "arrow_function" | "function_expression" | "function"
            ) {
                return None;
            }
            let mut s = def(
                SymbolKind::Function,
                field_text(declarator, "name", source),
                None,
            )?;
            s.signature_end = signature_end(value, &["body"]);
            Some(s)
        }
        (l, "export_statement") if l.is_script() => {
            let inner = node.child_by_field_name("declaration")?;
            let mut s = shape(language, inner, source)?;
            s.outer = node;
            Some(s)
        }
        (Language::Go, "function_declaration") => {
            def(SymbolKind::Function, field_text(node, "name", source), None)
        }
        (Language::Go, "method_declaration") => {
            def(SymbolKind::Method, field_text(node, "name", source), None)
        }
        (Language::Go, "type_declaration") => {
            let spec = (0..node.named_child_count())
                .filter_map(|i| node.named_child(i))
                .find(|c| matches!(c.kind(), "type_spec" | "type_alias"))?;
            let kind = match spec.child_by_field_name("type").map(|t| t.kind()) {
                Some("struct_type") => SymbolKind::Struct,
                Some("interface_type") => SymbolKind::Interface,
                _ => SymbolKind::Type,
            };
            let mut s = def(kind, field_text(spec, "name", source), None)?;
            s.signature_end = spec
                .child_by_field_name("type")
                .map_or(node.end_byte(), |t| t.start_byte());
            Some(s)
        }
        _ => None,
    }
}

/// For a Go method, the receiver's type name (its parent in qualified paths).
pub(crate) fn receiver(language: Language, node: Node, source: &str) -> Option<String> {
    if language != Language::Go || node.kind() != "method_declaration" {
        return None;
    }
    let params = node.child_by_field_name("receiver")?;
    let param = (0..params.named_child_count())
        .filter_map(|i| params.named_child(i))
        .find(|c| c.kind() == "parameter_declaration")?;
    field_text(param, "type", source).map(|t| type_name(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_by_extension() {
        assert_eq!(Language::from_path("src/lib.rs"), Some(Language::Rust));
        assert_eq!(Language::from_path("a/b.PY"), Some(Language::Python));
        assert_eq!(Language::from_path("x.pyi"), Some(Language::Python));
        assert_eq!(Language::from_path("web/app.tsx"), Some(Language::Tsx));
        assert_eq!(Language::from_path("m.mts"), Some(Language::TypeScript));
        assert_eq!(Language::from_path("a.jsx"), Some(Language::JavaScript));
        assert_eq!(Language::from_path("main.go"), Some(Language::Go));
        assert_eq!(Language::from_path("README.md"), None);
        assert_eq!(Language::from_path("Makefile"), None);
        assert_eq!(Language::from_path("dir.rs/file"), None);
    }

    #[test]
    fn type_names_lose_references_generics_and_paths() {
        assert_eq!(type_name("&mut Foo<T>"), "Foo");
        assert_eq!(type_name("crate::a::Bar"), "Bar");
        assert_eq!(type_name("*Server"), "Server");
        assert_eq!(type_name("List[int]"), "List");
    }
}
