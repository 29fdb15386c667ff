"""Deterministic mixed text corpus for the tokenizer conformance tests (no network, no data files).

Each entry is one test text (it may itself contain newlines). Categories: English prose, source code, CJK,
other scripts, emoji sequences, whitespace runs (ASCII and Unicode spaces), numbers in many scripts,
special-token strings embedded in text, combining marks and decomposed text, and invalid-looking content
(control characters, U+FFFD, mojibake, private-use and noncharacters, bidi controls, very long runs).

    python make_corpus.py [N] > corpus.jsonl       # one JSON string per line (default N = 6000)
"""

import json
import random
import sys
import unicodedata

WORDS = (
    "the of and to in is was he for it with as his on be at by had are but from or have an they which one you "
    "were all we her she there would their will when who him been has more if no out do so can what up said "
    "about other into than its time only could new them man some these then two first may any like now my "
    "such make over our even most me state after also made many did must before back see through way where "
    "get much go well your know should down work year because come people just say each those take day good "
    "how long Mr own too little use us very great still men here life both between old under last never place "
    "same another think house while high right might came off find states since used give against three "
    "himself look few general hand school part small American home during number again Mrs around thought "
    "went without however government don't I'm it's you're we've they'll she'd isn't O'Neil rock'n'roll "
    "tokenization Transformer naïve café résumé coöperate façade jalapeño Zürich São Paulo Ærøskøbing").split()

CODE = [
    "def fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}",
    "const x = arr.map((v, i) => v ** 2 + i).filter(Boolean);",
    "#include <vector>\nstd::vector<int> v{1, 2, 3};  // init\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "if __name__ == \"__main__\":\n    main()\n",
    "    }\n  }\n}\n",
    "x=1;y=2;z=x+y//3%4**5",
    "<div class=\"a\"><p>Hello &amp; welcome</p></div>",
    "{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}",
    "$ ls -la /usr/local/bin | grep -v '^d' && echo \"done\" >> log.txt 2>&1",
    "fn main() { println!(\"{:?}\", vec![1u8, 2, 3]); }",
    "@decorator\nclass Foo(Bar, metaclass=Meta):\n    __slots__ = ('a', 'b')\n",
    "a_b_c = __init__; ___ = ____; x->y; p::q; a ?? b; c ?: d; e !== f; g <=> h",
    "# Heading\n\n* item one\n* item **two**\n\n```python\nprint('hi')\n```\n",
    "https://example.com/path?q=1&lang=en#frag user@example.org 192.168.0.1:8080",
    "C:\\Users\\name\\Documents\\file.txt",
    "\t\tif (err != nil) {\n\t\t\treturn err\n\t\t}",
]

CJK = ["我想在这里写一些中文句子。", "今天天气很好，我们去公园散步吧！", "機械学習はとても面白いです。",
       "ひらがなとカタカナとKanjiの混在テキスト", "한국어 텍스트입니다. 안녕하세요!", "东京、大阪、京都",
       "「引用」『二重引用』【括弧】〔亀甲〕", "中文English混合123数字", "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３", "漢字かなカナ한글"]

SCRIPTS = ["Привет, как дела? Это тест.", "Γειά σου Κόσμε, τι κάνεις;", "مرحبا بالعالم، كيف حالك؟",
           "שלום עולם, מה שלומך?", "नमस्ते दुनिया, आप कैसे हैं?", "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง",
           "Xin chào thế giới, bạn khỏe không?", "Ελληνικά και Русский и English", "Türkçe: İstanbul, ılık, Işık",
           "Deutsch: Straße, Größe, ÄÖÜ äöü ß ẞ", "ქართული ენა", "Հայերեն լեզու", "ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ", "ⲘⲉⲧⲢⲉⲙⲛ̀ⲭⲏⲙⲓ"]

EMOJI = ["😀", "👍🏽", "🇺🇸", "🇯🇵", "❤️", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🧑🏿‍💻", "✅", "🚀", "🤖", "🎉", "👋🏻",
         "☺︎", "©", "®", "™", "🀄", "🂡", "😶‍🌫️", "🫠", "🪿", "1️⃣", "#️⃣", "🏴󠁧󠁢󠁳󠁣󠁴󠁿"]

SPACES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "\n\n\n", " \n", "\t\n", "\u00a0", "\u2000", "\u2003",
          "\u2009", "\u200a", "\u202f", "\u205f", "\u3000", "\u1680", "\u180e", "\u200b", "\ufeff", "\u2028",
          "\u2029", "\u0085", "\x0b", "\x0c", "\r"]

NUMBERS = ["0", "7", "42", "123", "1234", "12345", "1234567890", "3.14159", "-273.15", "1,000,000", "1e-9",
           "0x1F", "٠١٢٣٤٥٦٧٨٩", "۱۲۳", "१२३", "１２３", "²³", "½ ¾ ⅓", "Ⅻ ⅻ", "①②③", "𝟙𝟚𝟛", "10%",
           "$19.99", "€5", "2024-01-31", "12:34:56", "v1.2.3", "+1 (555) 123-4567", "99999999999999999999"]

SPECIAL = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<s>", "</s>", "<unk>", "[INST]", "[/INST]",
           "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|fim_prefix|>",
           "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<think>",
           "</think>", "<tool_call>", "[TOOL_CALLS]", "<file_sep>", "<repo_name>", "<|reserved_special_token_5|>",
           "<|im_start", "im_end|>", "< s>", "<<s>>", "<|endoftext|><|endoftext|>"]

COMBINING = ["e\u0301", "a\u0308o\u0308u\u0308", "n\u0303", "Z\u0351\u0352\u0353a\u0354\u0355l\u0356g\u0357o",
             "\u1100\u1161\u11a8", "ﬁ ﬂ ﬀ", "\u00c5 \u212b A\u030a", "ǅ ǆ Ǆ", "ｶﾞ ｶ\uff9e", "\u0041\u030a\u0301", "\u1e9b\u0323",
             "क्षत्रिय", "\u0915\u094d\u200d\u0937", "cafe\u0301", "\u2126 \u212b \u2160", "x\u20d7",
             "ﷺ", "\u0627\u0644\u0644\u0651\u0647"]

ODD = ["\ufffd", "Ã©tÃ©", "â€™", "\x00", "\x01\x02\x03", "\x7f", "\x1b[31mred\x1b[0m", "\ue000\uf8ff",
       "\U000f0000", "\ufdd0", "\uffff", "\U0010ffff", "\u202e reversed \u202c", "\u200e\u200f", "\u2066x\u2069",
       "\u0378", "\U000e0001", "a" * 300, "ab" * 120, "!" * 50, "." * 64, "-" * 80, "=" * 40, "x" * 1000,
       "\\u00e9", "\\x80\\xff", "%E2%82%AC", "&#8364; &eacute;", "'''", "\"\"\"", "``` ```", "''s 're",
       "'S 'T 'RE 'VE 'M 'LL 'D", "'ll've", "\u017f \u212a", "\u0399\u0308\u0301", "\u0130i\u0307\u0131I"]


def sentence(r):
    n = r.randint(3, 18)
    words = [r.choice(WORDS) for _ in range(n)]
    if r.random() < 0.5:
        words[0] = words[0].capitalize()
    if r.random() < 0.2:
        words[r.randrange(n)] = words[r.randrange(n)].upper()
    s = " ".join(words)
    if r.random() < 0.3:
        i = r.randrange(len(s) + 1)
        s = s[:i] + r.choice([",", ";", ":", " -", " —", " (", ")", " \"", "\""]) + s[i:]
    return s + r.choice([".", "!", "?", "...", "", ".\n", "?!", " :)"])


def piece(r, kind):
    if kind == "prose":
        return " ".join(sentence(r) for _ in range(r.randint(1, 4)))
    if kind == "code":
        return r.choice(CODE)
    if kind == "cjk":
        return "".join(r.choice(CJK) for _ in range(r.randint(1, 3)))
    if kind == "scripts":
        return r.choice(SCRIPTS)
    if kind == "emoji":
        return "".join(r.choice(EMOJI) + (r.choice(SPACES[:3]) if r.random() < 0.4 else "") for _ in range(r.randint(1, 6)))
    if kind == "space":
        return "".join(r.choice(SPACES) for _ in range(r.randint(1, 6)))
    if kind == "number":
        return " ".join(r.choice(NUMBERS) for _ in range(r.randint(1, 4)))
    if kind == "special":
        return r.choice(SPECIAL)
    if kind == "combining":
        if r.random() < 0.5:  # decomposed text: NFC normalizers change it, others must keep it
            return unicodedata.normalize(r.choice(["NFD", "NFKD"]), r.choice(SCRIPTS + CJK + [sentence(r)]))
        return r.choice(COMBINING)
    return r.choice(ODD)


KINDS = ["prose", "code", "cjk", "scripts", "emoji", "space", "number", "special", "combining", "odd"]
WEIGHTS = [30, 12, 8, 8, 7, 8, 8, 8, 5, 6]


def make(n=6000, seed=20240531):
    r = random.Random(seed)
    out = []
    # Every category alone first, then mixtures.
    for kind in KINDS:
        for _ in range(40):
            out.append(piece(r, kind))
    while len(out) < n:
        parts = r.choices(KINDS, WEIGHTS, k=r.randint(1, 5))
        glue = [r.choice(["", " ", " ", "\n", "  ", "\t"]) for _ in parts]
        text = "".join(piece(r, k) + g for k, g in zip(parts, glue))
        if r.random() < 0.1:
            text = text.strip()
        out.append(text)
    return out[:n]


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 6000
    for line in make(n):
        sys.stdout.write(json.dumps(line, ensure_ascii=True) + "\n")
