//! Greetings, thanks, farewells and other small talk: nothing to retrieve, recognized only when the
//! whole query is small talk.

use crate::words::Word;

/// The kind of small talk a query is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SmallTalk {
    Greeting,
    Thanks,
    Farewell,
    Courtesy,
    Acknowledgement,
    /// Words that may accompany small talk ("there", "so much") but are none on their own.
    Filler,
}

impl SmallTalk {
    pub fn label(self) -> &'static str {
        match self {
            Self::Greeting => "greeting",
            Self::Thanks => "thanks",
            Self::Farewell => "farewell",
            Self::Courtesy => "small talk",
            Self::Acknowledgement => "acknowledgement",
            Self::Filler => "filler",
        }
    }
}

use SmallTalk::{Acknowledgement, Courtesy, Farewell, Filler, Greeting, Thanks};

/// Phrases, lowercase, apostrophes straight, runs of a letter collapsed ("hiii" -> "hi").
const PHRASES: &[(&str, SmallTalk)] = &[
    ("hi", Greeting),
    ("hello", Greeting),
    ("helo", Greeting),
    ("hey", Greeting),
    ("heya", Greeting),
    ("hiya", Greeting),
    ("howdy", Greeting),
    ("hola", Greeting),
    ("greetings", Greeting),
    ("yo", Greeting),
    ("good morning", Greeting),
    ("good afternoon", Greeting),
    ("good evening", Greeting),
    ("good day", Greeting),
    ("morning", Greeting),
    ("evening", Greeting),
    ("gm", Greeting),
    ("thanks", Thanks),
    ("thank you", Thanks),
    ("thank u", Thanks),
    ("thankyou", Thanks),
    ("thx", Thanks),
    ("thnx", Thanks),
    ("thanx", Thanks),
    ("ty", Thanks),
    ("tysm", Thanks),
    ("cheers", Thanks),
    ("many thanks", Thanks),
    ("much appreciated", Thanks),
    ("appreciate it", Thanks),
    ("i appreciate it", Thanks),
    ("appreciated", Thanks),
    ("bye", Farewell),
    ("goodbye", Farewell),
    ("good bye", Farewell),
    ("bye bye", Farewell),
    ("byebye", Farewell),
    ("bye-bye", Farewell),
    ("see you", Farewell),
    ("see ya", Farewell),
    ("see you later", Farewell),
    ("see you soon", Farewell),
    ("cya", Farewell),
    ("take care", Farewell),
    ("good night", Farewell),
    ("goodnight", Farewell),
    ("farewell", Farewell),
    ("have a nice day", Farewell),
    ("have a good day", Farewell),
    ("have a great day", Farewell),
    ("have a good one", Farewell),
    ("talk to you later", Farewell),
    ("ttyl", Farewell),
    ("how are you", Courtesy),
    ("how are you doing", Courtesy),
    ("how are u", Courtesy),
    ("how's it going", Courtesy),
    ("hows it going", Courtesy),
    ("how is it going", Courtesy),
    ("what's up", Courtesy),
    ("whats up", Courtesy),
    ("sup", Courtesy),
    ("nice to meet you", Courtesy),
    ("pleased to meet you", Courtesy),
    ("how do you do", Courtesy),
    ("ok", Acknowledgement),
    ("okay", Acknowledgement),
    ("k", Acknowledgement),
    ("kk", Acknowledgement),
    ("cool", Acknowledgement),
    ("great", Acknowledgement),
    ("awesome", Acknowledgement),
    ("nice", Acknowledgement),
    ("perfect", Acknowledgement),
    ("got it", Acknowledgement),
    ("sounds good", Acknowledgement),
    ("understood", Acknowledgement),
    ("alright", Acknowledgement),
    ("all right", Acknowledgement),
    ("no problem", Acknowledgement),
    ("you're welcome", Acknowledgement),
    ("youre welcome", Acknowledgement),
    ("a", Filler),
    ("again", Filler),
    ("ah", Filler),
    ("all", Filler),
    ("and", Filler),
    ("advance", Filler),
    ("assistant", Filler),
    ("bot", Filler),
    ("buddy", Filler),
    ("bunch", Filler),
    ("dear", Filler),
    ("everybody", Filler),
    ("everyone", Filler),
    ("folks", Filler),
    ("for", Filler),
    ("friend", Filler),
    ("friends", Filler),
    ("guys", Filler),
    ("help", Filler),
    ("in", Filler),
    ("just", Filler),
    ("lot", Filler),
    ("mate", Filler),
    ("much", Filler),
    ("my", Filler),
    ("oh", Filler),
    ("really", Filler),
    ("so", Filler),
    ("the", Filler),
    ("then", Filler),
    ("there", Filler),
    ("ton", Filler),
    ("too", Filler),
    ("very", Filler),
    ("well", Filler),
    ("your", Filler),
];

/// The longest phrase, in words.
const MAX_PHRASE_WORDS: usize = 4;

/// Returns the kind of small talk when the query consists only of small-talk phrases and
/// fillers, with at least one phrase that is not a filler ("thank you so much", "hi there!",
/// "ok, bye"). Any other word ("hello world program", "thanks to CRISPR") means it is not.
pub(crate) fn small_talk(words: &[Word<'_>]) -> Option<SmallTalk> {
    let normalized: Vec<String> = words
        .iter()
        .filter(|w| w.is_real())
        .map(|w| collapse_runs(&w.lower))
        .collect();
    if normalized.is_empty() {
        return None;
    }
    let mut kind = None;
    let mut i = 0;
    while i < normalized.len() {
        let longest = (1..=MAX_PHRASE_WORDS.min(normalized.len() - i))
            .rev()
            .find_map(|n| {
                let phrase = normalized[i..i + n].join(" ");
                PHRASES
                    .iter()
                    .find(|(p, _)| *p == phrase)
                    .map(|&(_, k)| (n, k))
            });
        let (n, k) = longest?;
        if k != Filler && kind.is_none() {
            kind = Some(k);
        }
        i += n;
    }
    kind
}

/// Collapses runs of three or more identical characters to one ("hiii" -> "hi",
/// "hellooo" -> "hello", "byeee" -> "bye").
fn collapse_runs(word: &str) -> String {
    let chars: Vec<char> = word.chars().collect();
    let mut out = String::with_capacity(word.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|&&d| d == c).count();
        let keep = if run >= 3 { 1 } else { run };
        out.extend(std::iter::repeat_n(c, keep));
        i += run;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::words;

    fn kind(q: &str) -> Option<SmallTalk> {
        small_talk(&words(q))
    }

    #[test]
    fn small_talk_is_recognized() {
        for (q, k) in [
            ("hi", Greeting),
            ("Hello there!", Greeting),
            ("good morning", Greeting),
            ("heyyy 👋", Greeting),
            ("Hi, how are you?", Greeting),
            ("thanks!", Thanks),
            ("Thank you so much", Thanks),
            ("thanks for your help", Thanks),
            ("Thanks a lot, bye", Thanks),
            ("bye", Farewell),
            ("Bye-bye!", Farewell),
            ("See you later!", Farewell),
            ("have a nice day", Farewell),
            ("what's up?", Courtesy),
            ("ok", Acknowledgement),
            ("Got it, thanks", Acknowledgement),
        ] {
            assert_eq!(kind(q), Some(k), "{q}");
        }
    }

    #[test]
    fn content_is_never_small_talk() {
        for q in [
            "hello world program in rust",
            "thanks to CRISPR, gene editing is cheap",
            "hi, what is a monad?",
            "good morning routine for productivity",
            "how are you supposed to handle errors in go",
            "help",
            "so much",
            "",
            "🙂",
            "thanks 2",
        ] {
            assert_eq!(kind(q), None, "{q}");
        }
    }

    #[test]
    fn runs_collapse() {
        assert_eq!(collapse_runs("hellooo"), "hello");
        assert_eq!(collapse_runs("hiii"), "hi");
        assert_eq!(collapse_runs("good"), "good");
        assert_eq!(collapse_runs(""), "");
    }
}
