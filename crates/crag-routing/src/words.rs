//! Whitespace words with byte offsets, so sub-queries can be cut from the original text.

/// A whitespace-delimited word of the query.
#[derive(Debug, Clone)]
pub(crate) struct Word<'a> {
    /// The word as written, punctuation included.
    pub raw: &'a str,
    /// `raw` without leading punctuation and trailing punctuation (a trailing `+`/`#` after a
    /// letter or digit stays: "c++"); empty for pure punctuation or symbols.
    pub core: &'a str,
    /// `core` lowercased, typographic apostrophes as `'`.
    pub lower: String,
    /// Byte offset of `core` in the query.
    pub core_start: usize,
    /// Byte offset just past `raw`.
    pub end: usize,
    /// What follows `core` in `raw` (",", "?", "...").
    pub trailing: &'a str,
}

impl Word<'_> {
    /// Whether the word has letters or digits.
    pub fn is_real(&self) -> bool {
        !self.core.is_empty()
    }
}

/// Splits `text` on whitespace into words with their offsets.
pub(crate) fn words(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push(word(text, s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    out
}

fn word(text: &str, start: usize, end: usize) -> Word<'_> {
    let raw = &text[start..end];
    let lead = raw.len() - raw.trim_start_matches(|c: char| !c.is_alphanumeric()).len();
    let rest = &raw[lead..];
    let mut core_len = rest.trim_end_matches(|c: char| !c.is_alphanumeric()).len();
    if core_len > 0 {
        core_len += rest[core_len..]
            .chars()
            .take_while(|&c| c == '+' || c == '#')
            .map(char::len_utf8)
            .sum::<usize>();
    }
    let core = &rest[..core_len];
    Word {
        raw,
        core,
        lower: core.to_lowercase().replace('\u{2019}', "'"),
        core_start: start + lead,
        end,
        // A word of pure punctuation ("?", "--") is all trailing punctuation.
        trailing: if core.is_empty() {
            raw
        } else {
            &rest[core_len..]
        },
    }
}

/// Lowercase words that end with a dot without ending a sentence.
const ABBREVIATIONS: &[&str] = &[
    "al", "approx", "cf", "dr", "e.g", "eg", "etc", "fig", "i.e", "ie", "inc", "jr", "mr", "mrs",
    "ms", "no", "prof", "sr", "st", "v", "vol", "vs",
];

/// Whether `words[i]` ends a sentence: its trailing punctuation has `?`, `!` or `;`, or a dot
/// that is not part of an abbreviation and is followed by the end or a word that does not
/// start lowercase.
pub(crate) fn ends_sentence(words: &[Word<'_>], i: usize) -> bool {
    let Some(w) = words.get(i) else {
        return false;
    };
    if w.trailing
        .contains(['?', '!', ';', '\u{FF1F}', '\u{FF01}', '\u{3002}'])
    {
        return true;
    }
    if !w.trailing.contains(['.', '\u{2026}']) {
        return false;
    }
    if ABBREVIATIONS.contains(&w.lower.as_str()) || is_dotted_acronym(&w.lower) {
        return false;
    }
    words
        .get(i + 1)
        .and_then(|n| n.core.chars().next())
        .is_none_or(|c| !c.is_lowercase())
}

fn is_dotted_acronym(word: &str) -> bool {
    word.contains('.')
        && word
            .split('.')
            .all(|p| (1..=2).contains(&p.chars().count()) && p.chars().all(char::is_alphabetic))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_offsets_and_split_punctuation() {
        let text = " What's C++, (really)?  ok… ? ";
        let w = words(text);
        let cores: Vec<&str> = w.iter().map(|w| w.core).collect();
        assert_eq!(cores, ["What's", "C++", "really", "ok", ""]);
        let trailing: Vec<&str> = w.iter().map(|w| w.trailing).collect();
        assert_eq!(trailing, ["", ",", ")?", "…", "?"]);
        for w in &w {
            assert_eq!(&text[w.end - w.raw.len()..w.end], w.raw);
            assert_eq!(&text[w.core_start..w.core_start + w.core.len()], w.core);
        }
        assert_eq!(w[0].lower, "what's");
        assert!(words(" \n ").is_empty());
    }

    #[test]
    fn sentence_ends() {
        let w = words("Use e.g. serde. Then stop; Why? The U.S. Army v. Navy. Done");
        let ends: Vec<&str> = (0..w.len())
            .filter(|&i| ends_sentence(&w, i))
            .map(|i| w[i].core)
            .collect();
        assert_eq!(ends, ["serde", "stop", "Why", "Navy"]);
    }
}
