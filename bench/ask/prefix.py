"""How much of an LLM call is reading the prompt, and what reusing its prefix saves.

    python3 bench/ask/prefix.py "$(bash scripts/llm-server.sh start)"

Sends four prompts of about 2,000 tokens (a slice of docs/cgrag.md and a question) to the
OpenAI-compatible server, one output token each: context first with one question, the same
context with another question (the server may reuse the prefix), then question first twice
(no shared prefix beyond the question header). Prints seconds and prompt tokens per call.
"""
import json
import sys
import time
import urllib.request
from pathlib import Path

URL = sys.argv[1]
CONTEXT = (Path(__file__).resolve().parents[2] / "docs" / "cgrag.md").read_text()[:7000]


def call(prompt: str) -> tuple[float, int]:
    body = json.dumps({
        "model": "smollm2-135m-instruct",
        "messages": [{"role": "system", "content": "You answer questions."},
                     {"role": "user", "content": prompt}],
        "max_tokens": 1,
        "temperature": 0,
    }).encode()
    started = time.time()
    request = urllib.request.Request(f"{URL}/chat/completions", body,
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as r:
        usage = json.load(r)["usage"]
    return time.time() - started, usage["prompt_tokens"]


for label, prompt in [
    ("context first", f"{CONTEXT}\n\nQuestion: what is a pass?"),
    ("context first, another question", f"{CONTEXT}\n\nQuestion: what is a session?"),
    ("question first", f"Question: what is a gap?\n\n{CONTEXT}"),
    ("question first, another question", f"Question: what is a turn?\n\n{CONTEXT}"),
]:
    seconds, tokens = call(prompt)
    print(f"{label:<34} {seconds:6.2f} s  {tokens} prompt tokens")
