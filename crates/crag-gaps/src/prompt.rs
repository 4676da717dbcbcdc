//! The answer-and-gaps prompts: `ANSWER:` / `MISSING:` sections, or a JSON object.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// Example items of the sections prompt's `MISSING` list. A reply that repeats one of them
/// verbatim has echoed the prompt: the parser drops it.
pub const SECTIONS_EXAMPLE_GAPS: [&str; 3] = [
    "function_name in path/to/file.py",
    "ClassName in some/module.py",
    "the file that handles X",
];

/// Placeholder of the sections prompt's `ANSWER` section; an echoed placeholder is no answer.
pub const SECTIONS_ANSWER_PLACEHOLDER: &str = "[Your answer here]";

/// Placeholders of the JSON prompt's template, dropped when a reply echoes them.
pub const JSON_PLACEHOLDERS: [&str; 3] = [
    "<your answer>",
    "<one missing item per string>",
    "<id of a chunk you used>",
];

const SYSTEM_PROMPT: &str = "You answer questions about a codebase from the context you are \
given. The context may be incomplete: answer with what it shows, and say what is missing \
instead of guessing.";

const SECTIONS_INSTRUCTIONS: &str = "## Instructions
1. Answer the question as best you can with the available context.
2. If your answer would be MORE COMPLETE with additional code, list what is missing: one item \
per line, naming a symbol and its file when you can.
3. Format your response as:

ANSWER:
[Your answer here]

MISSING (or \"NONE\" if nothing needed):
- function_name in path/to/file.py
- ClassName in some/module.py
- the file that handles X";

const JSON_INSTRUCTIONS: &str = "## Instructions
1. Answer the question as best you can with the available context.
2. Say whether the context was sufficient, and if your answer would be MORE COMPLETE with \
additional code, list what is missing, naming a symbol and its file when you can (for example \
\"verify_user in auth.py\"). List nothing when nothing is needed.
3. List the ids of the chunks your answer used.
4. Reply with one JSON object and nothing else: no prose, no code fences. Its shape:

{\"answer\": \"<your answer>\", \"is_sufficient\": true, \"missing\": [\"<one missing item per \
string>\"], \"useful_chunk_ids\": [\"<id of a chunk you used>\"]}";

/// One retrieved chunk shown to the model: its id and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextChunk<'a> {
    /// The chunk's id, shown beside its number so the model can cite it.
    pub id: &'a str,
    /// The chunk's text, shown as is.
    pub text: &'a str,
}

impl<'a> ContextChunk<'a> {
    /// Returns a chunk with this id and text.
    pub fn new(id: &'a str, text: &'a str) -> Self {
        Self { id, text }
    }
}

/// A chat prompt as plain strings: the caller wraps them in the messages of its language
/// model port (system first, then user).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapsPrompt {
    /// The system message.
    pub system: String,
    /// The user message.
    pub user: String,
}

/// Builds the sections prompt: the chunks numbered from 1 with their ids, the question, and the
/// request to reply as `ANSWER:` followed by `MISSING (or "NONE" if nothing needed):` with one
/// item per line. [`crate::parse_answer_and_gaps`] reads the reply.
///
/// Chunk texts are shown whole: the caller packs them into its token budget beforehand.
pub fn answer_and_gaps_prompt(question: &str, chunks: &[ContextChunk<'_>]) -> GapsPrompt {
    GapsPrompt {
        system: SYSTEM_PROMPT.to_owned(),
        user: user_message(question, chunks, SECTIONS_INSTRUCTIONS),
    }
}

/// Builds the JSON variant of [`answer_and_gaps_prompt`]: same question and chunks, asking for
/// `{"answer": str, "is_sufficient": bool, "missing": [str], "useful_chunk_ids": [str]}`.
/// [`crate::parse_answer_and_gaps`] reads this reply too.
pub fn answer_and_gaps_json_prompt(question: &str, chunks: &[ContextChunk<'_>]) -> GapsPrompt {
    GapsPrompt {
        system: SYSTEM_PROMPT.to_owned(),
        user: user_message(question, chunks, JSON_INSTRUCTIONS),
    }
}

/// The sections prompt's parts in the order that lets a model server reuse the previous prompt: the
/// context first (a follow-up's starts with the session's cached chunks, a gap pass's with the
/// chunks the pass before kept), then the question, then the instructions. A llama.cpp server skips
/// the shared prefix; with the question first, every new question re-reads the whole context (about
/// 8 s for 2,000 tokens with SmolLM2-135M on 2 cores, 0.06 s when reused).
fn user_message(question: &str, chunks: &[ContextChunk<'_>], instructions: &str) -> String {
    let mut user = String::from("## Available Context\n");
    if chunks.is_empty() {
        user.push_str("(no context was retrieved)\n");
    }
    for (i, chunk) in chunks.iter().enumerate() {
        let _ = write!(
            user,
            "\n[{}] (id: {})\n{}\n",
            i + 1,
            chunk.id.trim(),
            chunk.text.trim_end()
        );
    }
    let _ = write!(user, "\n## Question\n{}\n\n", question.trim());
    user.push_str(instructions);
    user
}

#[cfg(test)]
mod tests;
