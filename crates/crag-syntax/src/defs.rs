//! The definitions of a file as a tree: top-level definitions, and the methods (or nested
//! definitions) of containers such as impls, classes, traits and modules.

use crag_core::SymbolKind;
use tree_sitter::Node;

use crate::lang::{receiver, shape, Language};

/// One definition.
#[derive(Debug, Clone)]
pub(crate) struct Def {
    /// What it is.
    pub kind: SymbolKind,
    /// Its own name.
    pub name: String,
    /// Names of the enclosing definitions within the file (or a Go method's receiver type).
    pub parents: Vec<String>,
    /// First byte, leading doc comments and attributes included.
    pub start: usize,
    /// First byte of the definition itself.
    pub def_start: usize,
    /// One past its last byte.
    pub end: usize,
    /// Where its signature ends.
    pub signature_end: usize,
    /// Nested definitions (a container's), in order.
    pub children: Vec<Def>,
}

/// The top-level definitions of `root`, in order, with their nested ones.
pub(crate) fn collect(language: Language, root: Node, source: &str) -> Vec<Def> {
    let mut out = Vec::new();
    collect_in(language, root, source, &[], None, &mut out, 0);
    out
}

/// Deepest nesting of containers followed (modules in modules in ...).
const MAX_DEPTH: usize = 8;

fn collect_in(
    language: Language,
    parent: Node,
    source: &str,
    parents: &[String],
    container: Option<SymbolKind>,
    out: &mut Vec<Def>,
    depth: usize,
) {
    let mut previous_end_row: Option<usize> = None;
    let mut attachments_start: Option<usize> = None;
    for i in 0..parent.named_child_count() {
        let Some(node) = parent.named_child(i) else {
            continue;
        };
        if language.is_attachment(node) {
            let starts_own_line = previous_end_row.is_none_or(|r| node.start_position().row > r);
            if attachments_start.is_none() && starts_own_line {
                attachments_start = Some(node.start_byte());
            }
            continue;
        }
        let leading = attachments_start.take();
        previous_end_row = Some(node.end_position().row);
        let Some(s) = shape(language, node, source) else {
            continue;
        };
        let mut kind = s.kind;
        let method_container = matches!(
            container,
            Some(SymbolKind::Impl | SymbolKind::Trait | SymbolKind::Class | SymbolKind::Interface)
        );
        if method_container && kind == SymbolKind::Function {
            kind = SymbolKind::Method;
        }
        let mut own_parents = parents.to_vec();
        if let Some(receiver) = receiver(language, node, source) {
            own_parents.push(receiver);
        }
        let mut children = Vec::new();
        if let (Some(body), true) = (s.body, depth < MAX_DEPTH) {
            let mut inner = own_parents.clone();
            inner.push(s.name.clone());
            collect_in(
                language,
                body,
                source,
                &inner,
                Some(kind),
                &mut children,
                depth + 1,
            );
        }
        let def_start = s.outer.start_byte();
        out.push(Def {
            kind,
            name: s.name,
            parents: own_parents,
            start: leading.unwrap_or(def_start).min(def_start),
            def_start,
            end: s.outer.end_byte().max(def_start),
            signature_end: s
                .signature_end
                .clamp(def_start, s.outer.end_byte().max(def_start)),
            children,
        });
    }
}
