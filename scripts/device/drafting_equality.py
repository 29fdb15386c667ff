#!/usr/bin/env python3
"""Drafted == serial through a running `tensorfold serve` (issue 6, the device half): for each case the token
ids with drafts equal those with "draft": false. Standard library only (the device has no openai package).
    python3 drafting_equality.py http://127.0.0.1:PORT
Prints one line per case and a summary with the acceptance rate; exits 1 on any difference."""
import itertools
import json
import sys
import urllib.request

PROMPTS = [
    "Repeat this list exactly: apples, bananas, cherries, dates, elderberries, figs, grapes.",
    "Copy this code exactly:\ndef add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n",
    "Write the word hello five times separated by spaces.",
    "Tell me about the sea.",
    "Quote: 'To be, or not to be, that is the question.' Now repeat the quote twice.",
]
SAMPLING = [{"temperature": 0.0}, {"temperature": 0.7}, {"temperature": 1.0}, {"temperature": 0.7, "top_p": 0.9},
            {"temperature": 1.0, "top_k": 40}, {"temperature": 0.7, "top_k": 20, "min_p": 0.05}]
SEEDS = [1, 2]


def generate(base, prompt, sampling, seed, draft):
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": 48, "seed": seed, "draft": draft,
            "return_token_ids": True, **sampling}
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        j = json.load(r)
    return j["choices"][0]["token_ids"], j["usage"]["tensorfold"]


def main():
    base = sys.argv[1]
    same = drafted = accepted = 0
    cases = list(itertools.product(PROMPTS, SAMPLING, SEEDS))
    for prompt, sampling, seed in cases:
        a, _ = generate(base, prompt, sampling, seed, False)
        b, c = generate(base, prompt, sampling, seed, True)
        same += a == b
        drafted += c["drafted"]
        accepted += c["accepted"]
        if a != b:
            print("DIFFER", prompt[:30], sampling, seed, a, b)
    print(f"drafting on this backend: {same}/{len(cases)} cases drafted == serial; {drafted} drafted, "
          f"{accepted} accepted ({accepted / max(1, drafted):.0%})")
    sys.exit(0 if same == len(cases) else 1)


if __name__ == "__main__":
    main()
