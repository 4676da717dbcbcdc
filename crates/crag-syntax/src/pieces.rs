//! From definitions to pieces: one per definition (parts for long ones), container headers,
//! and groups of top-level code; keys, metadata and the file's definition list.

use std::collections::HashMap;

use crag_core::{CodeMeta, SymbolDef, SymbolKind};

use crate::defs::Def;
use crate::lang::Language;
use crate::{CodePiece, SyntaxLimits};

/// Longest signature kept, in characters.
const MAX_SIGNATURE_CHARS: usize = 200;

/// The pieces of a file and where each definition lies.
pub(crate) struct Built {
    pub pieces: Vec<CodePiece>,
    pub definitions: Vec<(String, SymbolDef)>,
    /// Every definition's byte range with its qualified path, for placing references.
    pub scopes: Vec<(usize, usize, String)>,
}

impl Built {
    /// The key of the piece holding byte `offset` (or the last piece before it), and the
    /// qualified path of the innermost definition around it.
    pub(crate) fn locate(&self, offset: usize) -> Option<(&str, Option<&str>)> {
        let i = self.pieces.partition_point(|p| p.byte_start <= offset);
        let piece = self.pieces.get(i.checked_sub(1)?)?;
        let from = self
            .scopes
            .iter()
            .filter(|(s, e, _)| *s <= offset && offset < *e)
            .min_by_key(|(s, e, _)| e - s)
            .map(|(_, _, q)| q.as_str());
        Some((piece.key.as_str(), from))
    }
}

struct Builder<'a> {
    source: &'a str,
    language: Language,
    module: &'a str,
    limits: &'a SyntaxLimits<'a>,
    line_starts: Vec<usize>,
    used: HashMap<String, usize>,
    top: usize,
    out: Built,
}

/// Builds the pieces of `source` from its definitions.
pub(crate) fn build(
    source: &str,
    language: Language,
    module: &str,
    defs: &[Def],
    limits: &SyntaxLimits,
) -> Built {
    let mut b = Builder {
        source,
        language,
        module,
        limits,
        line_starts: std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect(),
        used: HashMap::new(),
        top: 0,
        out: Built {
            pieces: Vec::new(),
            definitions: Vec::new(),
            scopes: Vec::new(),
        },
    };
    let mut cursor = 0;
    for def in defs {
        if def.start > cursor {
            b.top_level(cursor, def.start);
        }
        b.definition(def, def.start.max(cursor), def.end);
        cursor = cursor.max(def.end);
    }
    if cursor < source.len() {
        b.top_level(cursor, source.len());
    }
    b.out.pieces.sort_by_key(|p| p.byte_start);
    b.out
}

/// Whether `text` holds more than blanks, closing brackets and separators.
fn meaningful(text: &str) -> bool {
    text.chars()
        .any(|c| !c.is_whitespace() && !matches!(c, '}' | ')' | ']' | ';' | ','))
}

impl Builder<'_> {
    fn line_of(&self, byte: usize) -> u32 {
        u32::try_from(self.line_starts.partition_point(|&s| s <= byte)).unwrap_or(u32::MAX)
    }

    /// `[start, end)` without leading and trailing whitespace.
    fn trim(&self, start: usize, end: usize) -> (usize, usize) {
        let text = &self.source[start..end];
        let lead = text.len() - text.trim_start().len();
        let trail = text.len() - text.trim_end().len();
        (start + lead, (end - trail).max(start + lead))
    }

    fn unique_key(&mut self, base: String) -> String {
        let n = self.used.entry(base.clone()).or_insert(0);
        *n += 1;
        if *n == 1 {
            base
        } else {
            format!("{base}#{n}")
        }
    }

    fn qualified(&self, relative: &str) -> String {
        if self.module.is_empty() {
            relative.to_owned()
        } else {
            format!("{}::{relative}", self.module)
        }
    }

    fn top_level(&mut self, start: usize, end: usize) {
        let (start, end) = self.trim(start, end);
        if !meaningful(&self.source[start..end]) {
            return;
        }
        let meta = CodeMeta {
            language: self.language.as_str().to_owned(),
            symbol: String::new(),
            symbol_kind: SymbolKind::TopLevel,
            qualified: self.module.to_owned(),
            signature: String::new(),
            part: 0,
            parts: 1,
        };
        for (a, b) in self.parts(start, end, 0) {
            let key = format!("top~{}", self.top);
            self.top += 1;
            let text = self.source[a..b].to_owned();
            self.push(key, a, b, text, meta.clone());
        }
    }

    fn signature(&self, def: &Def) -> String {
        let raw = &self.source[def.def_start..def.signature_end.max(def.def_start)];
        let raw = if raw.trim().is_empty() {
            self.source[def.def_start..def.end]
                .lines()
                .next()
                .unwrap_or_default()
        } else {
            raw
        };
        let flat: String = raw.split_whitespace().collect::<Vec<_>>().join(" ");
        let flat = flat
            .trim_end_matches(['{', ':', ' ', '='])
            .trim()
            .to_owned();
        flat.chars().take(MAX_SIGNATURE_CHARS).collect()
    }

    /// Emits `def` over `[start, end)` (its own range, widened over meaningful text between its
    /// siblings), then its nested definitions.
    fn definition(&mut self, def: &Def, start: usize, end: usize) {
        let mut path = def.parents.clone();
        path.push(def.name.clone());
        let relative = path.join("::");
        let qualified = self.qualified(&relative);
        let key = self.unique_key(relative);
        let signature = self.signature(def);
        let meta = CodeMeta {
            language: self.language.as_str().to_owned(),
            symbol: def.name.clone(),
            symbol_kind: def.kind,
            qualified: qualified.clone(),
            signature: signature.clone(),
            part: 0,
            parts: 1,
        };
        self.out
            .scopes
            .push((def.def_start, def.end, qualified.clone()));
        let entry = self.out.definitions.len();
        self.out.definitions.push((
            key.clone(),
            SymbolDef {
                name: def.name.clone(),
                qualified,
                kind: def.kind,
                language: self.language.as_str().to_owned(),
                line_start: self.line_of(def.def_start),
                line_end: self.line_of(def.end.saturating_sub(1).max(def.def_start)),
                signature: signature.clone(),
            },
        ));
        let Some(first) = def.children.first() else {
            self.emit(key, start, end, &signature, meta);
            return;
        };
        // The container's own text, up to its first nested definition, is a piece of its own
        // unless it is a bare signature line (`impl Foo {`), which goes with the first nested
        // definition instead (the container's definition then points at that piece).
        let (h_start, h_end) = self.trim(start, first.start.max(start));
        let bare = !self.source[h_start..h_end].contains('\n');
        let mut cursor = if bare {
            h_start
        } else {
            self.emit(key, h_start, h_end, &signature, meta);
            first.start.max(start)
        };
        let count = def.children.len();
        for (i, child) in def.children.iter().enumerate() {
            let child_start = if meaningful(&self.source[cursor..child.start.max(cursor)]) {
                cursor
            } else {
                child.start.max(cursor)
            };
            let tail = if i + 1 == count { end } else { child.end };
            let child_end = if i + 1 == count && meaningful(&self.source[child.end.min(tail)..tail])
            {
                tail
            } else {
                child.end
            };
            let first_piece = self.out.pieces.len();
            self.definition(child, child_start, child_end.max(child_start));
            if bare && i == 0 {
                if let Some(piece) = self.out.pieces.get(first_piece) {
                    self.out.definitions[entry].0 = piece.key.clone();
                }
            }
            cursor = child_end.max(child_start);
        }
    }

    /// Emits one definition's pieces: one, or parts with the signature repeated.
    fn emit(&mut self, key: String, start: usize, end: usize, signature: &str, meta: CodeMeta) {
        let (start, end) = self.trim(start, end);
        if start >= end {
            return;
        }
        let repeat = (self.limits.count_tokens)(signature) + 1;
        let parts = self.parts(start, end, repeat);
        let n = u32::try_from(parts.len()).unwrap_or(u32::MAX);
        for (k, (a, b)) in parts.into_iter().enumerate() {
            let part = u32::try_from(k).unwrap_or(u32::MAX);
            let raw = &self.source[a..b];
            let (key, text) = if k == 0 {
                (key.clone(), raw.to_owned())
            } else {
                (format!("{key}~{k}"), format!("{signature}\n{raw}"))
            };
            let meta = CodeMeta {
                part,
                parts: n,
                ..meta.clone()
            };
            self.push(key, a, b, text, meta);
        }
    }

    /// Cuts `[start, end)` at line ends into parts within the token limit; parts after the
    /// first have `repeat` tokens less room (the signature put before them).
    fn parts(&self, start: usize, end: usize, repeat: usize) -> Vec<(usize, usize)> {
        let max = self.limits.max_tokens.max(1);
        let text = &self.source[start..end];
        if (self.limits.count_tokens)(text) <= max {
            return vec![(start, end)];
        }
        let mut parts = Vec::new();
        let mut part_start = start;
        let mut used = 0;
        let mut offset = start;
        for line in text.split_inclusive('\n') {
            let tokens = (self.limits.count_tokens)(line);
            let room = if parts.is_empty() {
                max
            } else {
                max.saturating_sub(repeat).max(1)
            };
            if used > 0 && used + tokens > room {
                parts.push((part_start, offset));
                part_start = offset;
                used = 0;
            }
            used += tokens;
            offset += line.len();
        }
        parts.push((part_start, end));
        parts
            .into_iter()
            .map(|(a, b)| self.trim(a, b))
            .filter(|(a, b)| a < b)
            .collect()
    }

    fn push(&mut self, key: String, start: usize, end: usize, text: String, meta: CodeMeta) {
        let line_start = self.line_of(start);
        let line_end = self.line_of(end.saturating_sub(1).max(start));
        self.out.pieces.push(CodePiece {
            key,
            byte_start: start,
            byte_end: end,
            line_start,
            line_end: line_end.max(line_start),
            text,
            meta,
        });
    }
}
