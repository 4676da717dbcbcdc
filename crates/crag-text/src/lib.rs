//! crag's one text analysis, pure: the keyword index (BM25), query expansion, knowledge
//! refinement and the heuristic evaluator all reduce words to the same terms with it.
//!
//! The chain is the keyword index's: maximal runs of alphanumeric characters (the `s` of an
//! English possessive dropped, as Lucene's `EnglishPossessiveFilter` does), tokens of 40
//! bytes or more dropped (hashes, base64), lowercased, folded to ASCII where a letter has an
//! ASCII base (`é` -> `e`, `ß` -> `ss`), Lucene's 33 English stop words removed, and the
//! Snowball English stemmer applied (`frostem`, the implementation Tantivy's own `Stemmer`
//! uses). Crates that need more (a longer stop list for keyword extraction, phrases kept
//! whole for display) filter these terms further; they never stem differently.

use std::borrow::Cow;
use std::sync::OnceLock;

mod memo;
pub use memo::TermMemo;

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Tokens this many bytes long or longer are dropped (as the keyword index does).
pub const MAX_TOKEN_BYTES: usize = 40;

/// Lucene's English stop words (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`), as Tantivy's
/// `StopWordFilter::new(Language::English)` uses them; sorted.
pub const ENGLISH_STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// A token of a text: its byte range in the text and its raw form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    /// Byte offset of its first character.
    pub start: usize,
    /// Byte offset just past its last character.
    pub end: usize,
    /// The token as written.
    pub text: &'a str,
}

/// The raw tokens of `text`: maximal runs of alphanumeric characters, in order, without the
/// `s` of an English possessive (`the engine's` -> `the`, `engine`), as Lucene's
/// `EnglishPossessiveFilter` drops it.
pub fn tokens(text: &str) -> impl Iterator<Item = Token<'_>> {
    alphanumeric_runs(text).filter(move |t| !is_possessive_s(text, t))
}

/// Whether `token` is the `s` of `word's` (or `word’s`).
fn is_possessive_s(text: &str, token: &Token<'_>) -> bool {
    if !token.text.eq_ignore_ascii_case("s") {
        return false;
    }
    let mut before = text[..token.start].chars().rev();
    matches!(before.next(), Some('\'' | '\u{2019}'))
        && before.next().is_some_and(char::is_alphanumeric)
}

fn alphanumeric_runs(text: &str) -> impl Iterator<Item = Token<'_>> {
    let mut start: Option<usize> = None;
    let mut chars = text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')));
    std::iter::from_fn(move || {
        for (i, c) in chars.by_ref() {
            match (start, c.is_alphanumeric() && i < text.len()) {
                (None, true) => start = Some(i),
                (Some(s), false) => {
                    start = None;
                    return Some(Token {
                        start: s,
                        end: i,
                        text: &text[s..i],
                    });
                }
                _ => {}
            }
        }
        None
    })
}

/// Whether `word` (lowercase, folded) is one of [`ENGLISH_STOP_WORDS`].
pub fn is_stop_word(word: &str) -> bool {
    ENGLISH_STOP_WORDS.binary_search(&word).is_ok()
}

/// Folds `word` to ASCII where its letters have an ASCII base: a letter whose compatibility
/// decomposition is an ASCII character followed by combining marks becomes that character
/// (`é` -> `e`, `ﬁ` -> `fi`), and the Latin letters that do not decompose get their usual
/// spelling (`ß` -> `ss`, `æ` -> `ae`, `ø` -> `o`). Everything else (Greek, Cyrillic, CJK,
/// marks of other scripts) is kept as it is.
pub fn fold(word: &str) -> Cow<'_, str> {
    if word.is_ascii() {
        return Cow::Borrowed(word);
    }
    let mut out = String::with_capacity(word.len());
    for c in word.chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        if let Some(spelled) = latin_without_decomposition(c) {
            out.push_str(spelled);
            continue;
        }
        let decomposed: String = std::iter::once(c).nfkd().collect();
        let base: String = decomposed
            .chars()
            .filter(|d| !is_combining_mark(*d))
            .collect();
        if !base.is_empty() && base.is_ascii() {
            out.push_str(&base);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn latin_without_decomposition(c: char) -> Option<&'static str> {
    Some(match c {
        'ß' => "ss",
        'æ' => "ae",
        'Æ' => "AE",
        'œ' => "oe",
        'Œ' => "OE",
        'ø' => "o",
        'Ø' => "O",
        'ł' => "l",
        'Ł' => "L",
        'đ' | 'ð' => "d",
        'Đ' | 'Ð' => "D",
        'þ' => "th",
        'Þ' => "TH",
        'ı' => "i",
        _ => return None,
    })
}

fn stemmer() -> &'static frostem::Stemmer {
    static STEMMER: OnceLock<frostem::Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| frostem::Stemmer::new(frostem::Algorithm::English))
}

/// The Snowball English stem of `word` (expected lowercase).
///
/// A stem begins with its word's first character (after leading apostrophes, which it drops)
/// and is never longer than the word (`a_stem_keeps_the_first_letter_and_never_grows`): a
/// caller looking for given stems may skip, unstemmed, a word whose first letter begins none
/// of them or that is shorter than all.
pub fn stem(word: &str) -> String {
    stemmer().stem(word).into_owned()
}

/// The stems a caller looks for, and which words could stem to one of them: a word whose
/// first letter begins none of them, or shorter than all, cannot (see [`stem`]), so it need
/// not be stemmed to be ruled out.
#[derive(Debug, Clone, Default)]
pub struct StemTargets {
    initials: std::collections::HashSet<char>,
    shortest: usize,
}

impl StemTargets {
    /// The targets `stems`.
    pub fn new<'a>(stems: impl IntoIterator<Item = &'a str>) -> Self {
        let mut targets = Self::default();
        let mut shortest = None::<usize>;
        for target in stems {
            targets.initials.extend(target.chars().next());
            let len = target.chars().count();
            shortest = Some(shortest.map_or(len, |s| s.min(len)));
        }
        targets.shortest = shortest.unwrap_or(0);
        targets
    }

    /// Whether a word beginning with `first` could stem to a target.
    pub fn may_start_with(&self, first: char) -> bool {
        self.initials.contains(&first)
    }

    /// Whether `word` (lowercase, without leading apostrophes) could stem to a target.
    pub fn may_stem(&self, word: &str) -> bool {
        word.chars().next().is_some_and(|c| self.may_start_with(c))
            && word.chars().count() >= self.shortest
    }
}

/// The index term of one raw token: `None` when it is too long or a stop word.
pub fn term(token: &str) -> Option<String> {
    if token.len() >= MAX_TOKEN_BYTES {
        return None;
    }
    let lower = token.to_lowercase();
    // Lowercase again: a compatibility form may fold to a capital (`𝐀` -> `A`).
    let folded = match fold(&lower) {
        Cow::Borrowed(same) => Cow::Borrowed(same),
        Cow::Owned(folded) => Cow::Owned(folded.to_lowercase()),
    };
    if is_stop_word(&folded) {
        return None;
    }
    Some(stem(&folded))
}

/// The index terms of `text`, in order, duplicates kept: what the keyword index stores and
/// searches for this text.
pub fn analyze(text: &str) -> Vec<String> {
    tokens(text).filter_map(|t| term(t.text)).collect()
}

/// A token count for text no tokenizer counts: whitespace-separated words times 1.3, rounded
/// down (integer arithmetic, so every caller gets the same count). The engine packs its token
/// budget with it when the embedder cannot count, the heuristic evaluator weighs length
/// adequacy with it, and the gap detector reports its model calls' tokens with it.
pub fn estimate_tokens(text: &str) -> usize {
    text.split_whitespace().count().saturating_mul(13) / 10
}

/// Words where Snowball English changes more than a suffix (its exceptions, `y` handling,
/// the `e` it adds back), with apostrophes, hyphens, digits and non-ASCII letters: for tests
/// of what relies on [`stem`]'s properties. They hold for these (tested here) and for the
/// 38.6k distinct words of SciFact and Cranfield (checked 2026-11-26).
pub const STEMMING_EDGE_CASES: &[&str] = &[
    "dying",
    "lying",
    "tying",
    "skies",
    "skis",
    "idly",
    "gently",
    "ugly",
    "early",
    "only",
    "singly",
    "news",
    "howe",
    "atlas",
    "cosmos",
    "bias",
    "andes",
    "yes",
    "yield",
    "sky",
    "hoping",
    "hoped",
    "happy",
    "happily",
    "generously",
    "conditional",
    "rationalization",
    "agreed",
    "feed",
    "ties",
    "cries",
    "crying",
    "ied",
    "y",
    "ys",
    "ly",
    "s",
    "ss",
    "ing",
    "éclair",
    "über",
    "naïve",
    "straße",
    "1990s",
    "5g",
    "covid-19",
    "x-rays",
    "don't",
    "patient's",
    "patients'",
    "'tis",
    "node.js",
    "c++",
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_stem_keeps_the_first_letter_and_never_grows() {
        for word in STEMMING_EDGE_CASES {
            let stemmed = stem(word);
            let first = word.trim_start_matches('\'').chars().next();
            assert_eq!(stemmed.chars().next(), first, "{word} -> {stemmed}");
            assert!(
                stemmed.chars().count() <= word.chars().count(),
                "{word} -> {stemmed}"
            );
        }
    }

    #[test]
    fn stem_targets_rule_out_only_words_that_cannot_stem_to_them() {
        let stems: Vec<String> = ["vitamins", "dying", "effects"].map(stem).to_vec();
        let targets = StemTargets::new(stems.iter().map(String::as_str));
        for word in STEMMING_EDGE_CASES
            .iter()
            .chain(&["vitamin", "die", "effect", "dies"])
        {
            if stems.contains(&stem(word)) {
                assert!(targets.may_stem(word), "{word}");
            }
        }
        assert!(!targets.may_stem("bone"));
        assert!(!targets.may_stem("ve"), "shorter than every target");
        assert!(!StemTargets::new([]).may_stem("anything"));
    }

    proptest! {
        #[test]
        fn any_lowercase_word_keeps_its_first_letter_and_never_grows(word in "[a-z][a-z'-]{0,14}") {
            let stemmed = stem(&word);
            prop_assert_eq!(stemmed.chars().next(), word.chars().next());
            prop_assert!(stemmed.chars().count() <= word.chars().count());
        }
    }

    #[test]
    fn stop_words_are_sorted() {
        assert!(ENGLISH_STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(ENGLISH_STOP_WORDS.len(), 33);
    }

    #[test]
    fn analysis_splits_lowercases_folds_drops_stop_words_and_stems() {
        assert_eq!(
            analyze("The Café's régime: running, studies and IT-systems!"),
            ["cafe", "regim", "run", "studi", "system"]
        );
        // Possessives lose their `s` (straight or curly apostrophe); other lone `s` stay.
        assert_eq!(
            analyze("the engine’s parts, John's S, vitamin s, 's"),
            ["engin", "part", "john", "s", "vitamin", "s", "s"]
        );
        assert_eq!(analyze("Straße Ærø Łódź"), ["strass", "aero", "lodz"]);
        assert_eq!(analyze("α-helix β2"), ["α", "helix", "β2"]);
        assert!(analyze(&"x".repeat(40)).is_empty());
        assert_eq!(analyze(&"x".repeat(39)), ["x".repeat(39)]);
    }

    #[test]
    fn tokens_carry_their_offsets() {
        let t: Vec<_> = tokens("  ab, cé-d ").collect();
        assert_eq!(
            t,
            [
                Token {
                    start: 2,
                    end: 4,
                    text: "ab"
                },
                Token {
                    start: 6,
                    end: 9,
                    text: "cé"
                },
                Token {
                    start: 10,
                    end: 11,
                    text: "d"
                },
            ]
        );
    }

    #[test]
    fn the_stemmer_is_snowball_english() {
        for (word, stemmed) in [
            ("effects", "effect"),
            ("studies", "studi"),
            ("running", "run"),
            ("computed", "comput"),
            ("generalization", "general"),
            ("updates", "updat"),
        ] {
            assert_eq!(stem(word), stemmed, "{word}");
        }
    }

    #[test]
    fn stop_words_are_dropped_before_stemming_as_tantivy_does() {
        // Tantivy's analyzer filters stop words before it stems, so a stem may spell one:
        // "aed" is not a stop word and stems to "a". Both legs see the same term.
        assert!(!is_stop_word("aed"));
        assert_eq!(stem("aed"), "a");
        assert_eq!(term("aed").as_deref(), Some("a"));
        assert_eq!(term("A"), None);
    }

    proptest! {
        #[test]
        fn terms_are_lowercase_short_and_no_stop_word_is_stemmed(text in "\\PC{0,200}") {
            for token in tokens(&text) {
                let Some(t) = term(token.text) else { continue };
                prop_assert!(t.len() < MAX_TOKEN_BYTES * 2, "{t}");
                prop_assert!(!t.is_empty());
                prop_assert_eq!(t.to_lowercase(), t.clone());
                let folded = fold(&token.text.to_lowercase()).to_lowercase();
                prop_assert!(!is_stop_word(&folded), "{folded} was kept");
            }
        }
    }

    #[test]
    fn token_estimate_is_words_times_1_3_rounded_down() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("   "), 0);
        assert_eq!(estimate_tokens("one two three"), 3);
        assert_eq!(
            estimate_tokens("one two three four five six seven eight nine ten"),
            13
        );
    }

    proptest! {
        // The integer count equals `floor(words * 1.3)` in f64, the formula the heuristic
        // evaluator's length adequacy follows.
        #[test]
        fn token_estimate_equals_the_float_formula(words in 0usize..20_000) {
            let text = "w ".repeat(words);
            prop_assert_eq!(
                estimate_tokens(&text) as f64,
                (words as f64 * 1.3).floor()
            );
        }
    }
}
