//! The index's analyzer: `crag-text`'s analysis as a Tantivy tokenizer, so BM25 indexes and
//! searches exactly the terms query expansion, refinement and the heuristic evaluator use.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Tokenizer emitting `crag_text`'s terms, each with its raw token's byte range and position
/// (positions count every raw token, stop words included, as Tantivy's filters leave them).
#[derive(Clone, Default)]
pub(crate) struct CragTextTokenizer {
    token: Token,
}

/// The terms of one text.
pub(crate) struct CragTextStream<'a> {
    terms: std::vec::IntoIter<(usize, usize, usize, String)>,
    token: &'a mut Token,
}

impl Tokenizer for CragTextTokenizer {
    type TokenStream<'a> = CragTextStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CragTextStream<'a> {
        self.token.reset();
        let terms: Vec<_> = crag_text::tokens(text)
            .enumerate()
            .filter_map(|(position, t)| {
                crag_text::term(t.text).map(|term| (position, t.start, t.end, term))
            })
            .collect();
        CragTextStream {
            terms: terms.into_iter(),
            token: &mut self.token,
        }
    }
}

impl TokenStream for CragTextStream<'_> {
    fn advance(&mut self) -> bool {
        let Some((position, from, to, text)) = self.terms.next() else {
            return false;
        };
        self.token.position = position;
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.text = text;
        true
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}
