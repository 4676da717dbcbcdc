//! The code languages a filter may name.

/// The names of the languages code filters accept (`filters.languages`, `crag query
/// --language`): those crag chunks by syntax.
pub fn code_languages() -> Vec<&'static str> {
    crag_syntax::Language::all()
        .map(crag_syntax::Language::as_str)
        .collect()
}
