#!/usr/bin/env python3
"""One chat completion through the official openai SDK against a running `tensorfold serve`.

    openai_request.py BASE_URL        (e.g. http://127.0.0.1:18089/v1)
"""
import sys
import time

from openai import OpenAI


def main():
    client = OpenAI(base_url=sys.argv[1], api_key="none")
    model = client.models.list().data[0].id
    t0 = time.time()
    r = client.chat.completions.create(model=model, temperature=0, max_tokens=48,
                                       messages=[{"role": "user", "content": "What is the capital of France?"}])
    dt = time.time() - t0
    text = r.choices[0].message.content
    assert text, "empty reply"
    print(f"model {model}: {r.usage.completion_tokens} tokens in {dt:.2f} s: {text[:60]!r}")
    stream = client.chat.completions.create(model=model, temperature=0, max_tokens=16, stream=True,
                                            messages=[{"role": "user", "content": "Say hi."}])
    chunks = sum(1 for _ in stream)
    print(f"streamed {chunks} chunks; first reply: {text[:60]!r}")


if __name__ == "__main__":
    main()
