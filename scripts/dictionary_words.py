#!/usr/bin/env python3
"""Writes a copy of a Japanese or Korean folder of markdown, and of its query file, with every
run of CJK letters cut into a dictionary's words, for measuring a dictionary segmenter
against the pairs that situate cuts such runs into:

    scripts/dictionary_words.py LANG SRC_DIR OUT_DIR [QUERIES OUT_QUERIES]

LANG is `ja` (MeCab with IPADIC: Debian's packages `mecab` and `mecab-ipadic-utf8`, and
PyPI's `mecab-python3`) or `ko` (MeCab with mecab-ko-dic: PyPI's `python-mecab-ko`). These
are the dictionaries that lindera embeds as `ipadic` and `ko-dic`. Words are joined by
spaces inside each line, so every line keeps its number and the query files' answers stay
where they are. A query also leaves out its particles, endings and auxiliaries (the
dictionary's part-of-speech tags for them), as Lucene's Japanese and Korean analyzers do.

With the shipped analyzer, the copy measures a dictionary's word boundaries with pairs
inside each word; docs/languages.md has the figures.
"""

import json
import pathlib
import re
import shutil
import sys

# Han, kana and Hangul letters, with the iteration marks: what the pairs are cut from.
CJK_RUN = re.compile(r"[\u3005-\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff66-\uff9f]+")


def japanese():
    import MeCab

    tagger = MeCab.Tagger("-r /etc/mecabrc -d /var/lib/mecab/dic/ipadic-utf8")

    def words(text):
        for line in tagger.parse(text).splitlines():
            if "\t" in line:
                surface, features = line.split("\t", 1)
                yield surface, features.split(",")[0]

    # Particles, auxiliary verbs, symbols.
    return words, ("助詞", "助動詞", "記号")


def korean():
    import mecab

    tagger = mecab.MeCab()
    # Particles (J), endings (E), affixes (X), symbols (S), the copula (VCP).
    return tagger.pos, ("J", "E", "X", "S", "VCP")


def cut(text, words, grammar, query):
    def run(match):
        pieces = list(words(match.group(0)))
        if query:
            # A query keeps its grammar only when it has nothing else.
            pieces = [p for p in pieces if not p[1].startswith(grammar)] or pieces
        return " " + " ".join(surface for surface, _ in pieces) + " "

    return CJK_RUN.sub(run, text)


def main():
    if len(sys.argv) not in (4, 6) or sys.argv[1] not in ("ja", "ko"):
        sys.exit(__doc__)
    words, grammar = japanese() if sys.argv[1] == "ja" else korean()
    source, target = pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    for path in sorted(target.rglob("*.md")):
        lines = path.read_text(encoding="utf-8").split("\n")
        path.write_text("\n".join(cut(line, words, grammar, False) for line in lines), encoding="utf-8")
    if len(sys.argv) == 6:
        with open(sys.argv[4], encoding="utf-8") as queries, open(sys.argv[5], "w", encoding="utf-8") as out:
            for line in queries:
                if line.strip():
                    query = json.loads(line)
                    query["query"] = cut(query["query"], words, grammar, True).strip()
                    out.write(json.dumps(query, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
