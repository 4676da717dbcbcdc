//! The normalised key of a gap, for de-duplication and the session's not-found set.

use crate::clean::is_quote;

/// Returns the normalised key of `gap`: backticks removed, whitespace runs collapsed to one
/// space, lowercased, then quotes and whitespace trimmed from both ends and `.,;:!?` from the
/// end. Two gaps that differ only in case, spacing, quoting or a final full stop share a key,
/// and `gap_key(&gap_key(x)) == gap_key(x)`.
pub fn gap_key(gap: &str) -> String {
    let mut collapsed = String::with_capacity(gap.len());
    for word in gap.split_whitespace() {
        let word: String = word.chars().filter(|&c| c != '`').collect();
        if word.is_empty() {
            continue;
        }
        if !collapsed.is_empty() {
            collapsed.push(' ');
        }
        collapsed.push_str(&word);
    }
    let lower = collapsed.to_lowercase();
    lower
        .trim_start_matches(|c: char| c.is_whitespace() || is_quote(c))
        .trim_end_matches(|c: char| {
            c.is_whitespace() || is_quote(c) || matches!(c, '.' | ',' | ';' | ':' | '!' | '?')
        })
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::gap_key;

    #[test]
    fn keys_ignore_case_spacing_and_quotes() {
        assert_eq!(
            gap_key("  `Verify_User`  in   Auth.py. "),
            "verify_user in auth.py"
        );
        assert_eq!(
            gap_key("\"verify_user in auth.py\""),
            "verify_user in auth.py"
        );
        assert_eq!(gap_key("VERIFY_USER IN AUTH.PY"), "verify_user in auth.py");
        assert_eq!(gap_key(".env"), ".env");
        assert_eq!(gap_key(" ` ` "), "");
    }

    #[test]
    fn keys_are_idempotent_on_awkward_input() {
        for raw in [
            "a ` b",
            "' \"x\" '",
            "İstanbul",
            "x . ",
            "``",
            "a\u{a0}b",
            "ǅ",
        ] {
            let once = gap_key(raw);
            assert_eq!(gap_key(&once), once, "{raw:?}");
        }
    }
}
