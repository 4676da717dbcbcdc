//! Questions about how things relate: the knowledge-graph route's `relational` rule.

use crate::words::Word;

/// Word sequences that ask how things relate; matched on lowercase words, whole words only.
const CUES: &[&[&str]] = &[
    &["related", "to"],
    &["relate", "to"],
    &["relates", "to"],
    &["relationship", "between"],
    &["relationships", "between"],
    &["relationship", "of"],
    &["relation", "between"],
    &["relation", "of"],
    &["connection", "between"],
    &["connections", "between"],
    &["connected", "to"],
    &["associated", "with"],
    &["association", "between"],
    &["association", "of"],
    &["link", "between"],
    &["links", "between"],
    &["linked", "to"],
    &["interaction", "between"],
    &["interactions", "between"],
    &["interaction", "of"],
    &["interacts", "with"],
    &["interact", "with"],
    &["role", "of"],
    &["depends", "on"],
    &["depend", "on"],
];

/// The cue `words` contain, as written in [`CUES`] (joined by spaces), if any.
pub(crate) fn relational_cue(words: &[Word<'_>]) -> Option<String> {
    let lower: Vec<&str> = words.iter().map(|w| w.lower.as_str()).collect();
    CUES.iter()
        .find(|cue| lower.windows(cue.len()).any(|w| w == **cue))
        .map(|cue| cue.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::words;

    #[test]
    fn cues_are_whole_words() {
        for (q, cue) in [
            ("How is p53 related to apoptosis?", Some("related to")),
            ("the role of vitamin D in bone density", Some("role of")),
            (
                "Relationship between sleep and memory",
                Some("relationship between"),
            ),
            ("genes associated with longevity", Some("associated with")),
            ("unrelated topics to discuss", None),
            ("the roles offered", None),
            ("what is a borrow checker", None),
        ] {
            assert_eq!(relational_cue(&words(q)).as_deref(), cue, "{q}");
        }
    }
}
