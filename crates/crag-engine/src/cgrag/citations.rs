//! Citations `[n]` in an answer point at the n-th returned artifact (1-based); those that point
//! nowhere are removed and counted.

/// `answer` with every `[n]` outside `1..=artifacts` removed, and how many were removed.
/// Groups such as `[1, 7]` keep their valid numbers (`[1]`); brackets holding anything but
/// numbers are left alone.
pub fn clean_citations(answer: &str, artifacts: usize) -> (String, usize) {
    let mut out = String::with_capacity(answer.len());
    let mut removed = 0;
    let mut rest = answer;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else {
            out.push_str(&rest[open..]);
            return (out, removed);
        };
        let inner = &after[..close];
        let numbers: Option<Vec<usize>> = inner
            .split(',')
            .map(|p| p.trim().parse::<usize>().ok())
            .collect();
        match numbers {
            Some(numbers) if !inner.trim().is_empty() => {
                let valid: Vec<String> = numbers
                    .iter()
                    .filter(|&&n| (1..=artifacts).contains(&n))
                    .map(usize::to_string)
                    .collect();
                removed += numbers.len() - valid.len();
                if valid.is_empty() {
                    // Drop the space that led into the citation too.
                    if out.ends_with(' ') {
                        out.pop();
                    }
                } else {
                    out.push('[');
                    out.push_str(&valid.join(", "));
                    out.push(']');
                }
            }
            _ => {
                out.push('[');
                out.push_str(inner);
                out.push(']');
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    (out, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_pointing_nowhere_are_removed_and_counted() {
        assert_eq!(
            clean_citations("Fusion is convex [1]. Ranks use RRF [4].", 2),
            ("Fusion is convex [1]. Ranks use RRF.".to_owned(), 1)
        );
        assert_eq!(
            clean_citations("See [1, 3] and [0].", 2),
            ("See [1] and.".to_owned(), 2)
        );
        assert_eq!(
            clean_citations("No citations.", 0),
            ("No citations.".to_owned(), 0)
        );
        assert_eq!(
            clean_citations("an [array] and [ ] and [2", 1),
            ("an [array] and [ ] and [2".to_owned(), 0)
        );
        assert_eq!(
            clean_citations("[99999999999999999999999] ok", 3),
            ("[99999999999999999999999] ok".to_owned(), 0),
            "unparseable numbers are not citations"
        );
        assert_eq!(clean_citations("ünï [2] ç", 2), ("ünï [2] ç".to_owned(), 0));
    }
}
