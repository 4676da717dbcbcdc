//! Pure arithmetic ("2 + 2", "what is 12*7?"): nothing to retrieve, recognized only when the whole
//! query is one expression.

/// Leading phrases of an arithmetic question, longest first.
const PREFIXES: &[&str] = &[
    "what is the result of",
    "what is the value of",
    "how much is",
    "what is",
    "what's",
    "what\u{2019}s",
    "whats",
    "calculate",
    "compute",
    "evaluate",
    "solve",
];

/// Expressions longer than this are not treated as arithmetic questions.
const MAX_LEN: usize = 200;
/// Parenthesis nesting beyond this is rejected rather than recursed into.
const MAX_DEPTH: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Num,
    /// `+` or `-`: binary, or a sign.
    Sign,
    /// Any other binary operator: `* / ^ x × ÷ mod of`, "times", "divided by" ...
    Bin,
    /// A function applied to what follows: "sqrt", "square root of".
    Func,
    /// `%` or "percent".
    Percent,
    /// "squared", "cubed".
    Power,
    Open,
    Close,
}

/// Whether the query is a pure arithmetic expression, optionally asked as a question
/// ("what is", "calculate", "how much is") and ending with `?`, `=` or `.`. It needs at least
/// one operation; a lone number, an equation with unknowns ("2x + 3 = 7") or arithmetic
/// inside a sentence ("what is 2 + 2 in binary") is not pure arithmetic.
pub(crate) fn is_arithmetic(query: &str) -> bool {
    if query.len() > MAX_LEN {
        return false;
    }
    let lower = query.trim().to_lowercase();
    let mut s = lower
        .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '?' | '!' | '.' | '='))
        .trim();
    s = s.strip_prefix("please ").unwrap_or(s).trim_start();
    for prefix in PREFIXES {
        if let Some(rest) = s.strip_prefix(prefix) {
            if rest.starts_with(|c: char| !c.is_alphabetic()) {
                s = rest.trim_start();
                break;
            }
        }
    }
    let Some(tokens) = lex(s) else {
        return false;
    };
    let mut parser = Parser {
        tokens: &tokens,
        pos: 0,
        operations: 0,
    };
    parser.expression(0) && parser.pos == tokens.len() && parser.operations > 0
}

fn lex(s: &str) -> Option<Vec<Tok>> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() {
            let w: String = chars[i..]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .collect();
            i += w.len();
            words.push(w);
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        flush_words(&mut words, &mut out)?;
        let digit_at = |j: usize| chars.get(j).is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() || (c == '.' && digit_at(i + 1)) {
            while i < chars.len() {
                let c = chars[i];
                let thousands = c == ',' && (1..=3).all(|k| digit_at(i + k)) && !digit_at(i + 4);
                if c.is_ascii_digit() || thousands || (c == '.' && digit_at(i + 1)) {
                    i += 1;
                } else {
                    break;
                }
            }
            out.push(Tok::Num);
            continue;
        }
        let tok = match c {
            '+' | '-' | '\u{2212}' => Tok::Sign,
            '*' | '/' | '^' | '\u{D7}' | '\u{F7}' | '\u{B7}' => Tok::Bin,
            '%' => Tok::Percent,
            '(' => Tok::Open,
            ')' => Tok::Close,
            _ => return None,
        };
        // `**` is one power operator.
        if c == '*' && chars.get(i + 1) == Some(&'*') {
            i += 1;
        }
        out.push(tok);
        i += 1;
    }
    flush_words(&mut words, &mut out)?;
    Some(out)
}

/// Turns buffered words into operators; `None` when one is not an arithmetic word.
fn flush_words(words: &mut Vec<String>, out: &mut Vec<Tok>) -> Option<()> {
    let mut i = 0;
    let at = |i: usize, w: &str| words.get(i).is_some_and(|x| x == w);
    while i < words.len() {
        let (tok, used) = match words[i].as_str() {
            "plus" | "minus" => (Tok::Sign, 1),
            "times" | "x" | "over" | "mod" | "modulo" | "of" => (Tok::Bin, 1),
            "multiplied" | "divided" if at(i + 1, "by") => (Tok::Bin, 2),
            "to" if at(i + 1, "the") && at(i + 2, "power") && at(i + 3, "of") => (Tok::Bin, 4),
            "sqrt" if at(i + 1, "of") => (Tok::Func, 2),
            "sqrt" => (Tok::Func, 1),
            "square" if at(i + 1, "root") && at(i + 2, "of") => (Tok::Func, 3),
            "the" if at(i + 1, "square") && at(i + 2, "root") && at(i + 3, "of") => (Tok::Func, 4),
            "squared" | "cubed" => (Tok::Power, 1),
            "percent" => (Tok::Percent, 1),
            _ => return None,
        };
        out.push(tok);
        i += used;
    }
    words.clear();
    Some(())
}

/// Validates `expression := unary (operator unary)*`,
/// `unary := (sign | function)* (number | "(" expression ")") (percent | power)*`.
struct Parser<'a> {
    tokens: &'a [Tok],
    pos: usize,
    operations: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Tok> {
        self.tokens.get(self.pos).copied()
    }

    fn expression(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH || !self.unary(depth) {
            return false;
        }
        while let Some(Tok::Sign | Tok::Bin) = self.peek() {
            self.pos += 1;
            self.operations += 1;
            if !self.unary(depth) {
                return false;
            }
        }
        true
    }

    fn unary(&mut self, depth: usize) -> bool {
        while let Some(t @ (Tok::Sign | Tok::Func)) = self.peek() {
            self.pos += 1;
            if t == Tok::Func {
                self.operations += 1;
            }
        }
        match self.peek() {
            Some(Tok::Num) => self.pos += 1,
            Some(Tok::Open) => {
                self.pos += 1;
                if !self.expression(depth + 1) || self.peek() != Some(Tok::Close) {
                    return false;
                }
                self.pos += 1;
            }
            _ => return false,
        }
        while let Some(t @ (Tok::Percent | Tok::Power)) = self.peek() {
            self.pos += 1;
            if t == Tok::Power {
                self.operations += 1;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_recognized() {
        for q in [
            "2 + 2",
            "what is 12*7?",
            "What's 3.5 / 0.5",
            "calculate 1,250 × 4",
            "how much is 15% of 200?",
            "(1 + 2) * -3 =",
            "2^10",
            "2 ** 8",
            "what is 7 times 6",
            "what is 100 divided by 4?",
            "what is 5 squared",
            "what is the square root of 144?",
            "sqrt(2)",
            "12x7",
            "10 - -2",
            "please calculate 9 mod 4",
        ] {
            assert!(is_arithmetic(q), "{q}");
        }
    }

    #[test]
    fn other_queries_are_not_arithmetic() {
        for q in [
            "",
            "42",
            "what is 42",
            "what is 2 + 2 in binary",
            "2x + 3 = 7",
            "what is rust",
            "calculate the area of a circle",
            "1 +",
            "(1 + 2",
            "1 + 2)",
            "what is 1,2 + 3",
            "whatis 1+1",
            "calculated 1+1",
            "$5 + $3",
        ] {
            assert!(!is_arithmetic(q), "{q}");
        }
    }

    #[test]
    fn deep_nesting_is_rejected_not_recursed() {
        let deep = format!("{}1{}", "(".repeat(90), ")".repeat(90));
        assert!(!is_arithmetic(&deep));
        let ok = format!("{}1 + 1{}", "(".repeat(10), ")".repeat(10));
        assert!(is_arithmetic(&ok));
    }
}
