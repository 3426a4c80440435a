#!/usr/bin/env python3
"""Writes a query file's queries as typed without accents, for measuring how search meets
them:

    scripts/without_accents.py QUERIES > PLAIN_QUERIES

Each Latin letter loses its accents (`é` → `e`, `ñ` → `n`, `ß` → `ss`), as a reader types
on a keyboard of another layout or a phone. Words in the Arabic script are typed as readers
commonly type them: an alef without its hamza or madda (`أ`, `إ`, `آ` → `ا`), `ة` as `ه`,
`ى` as `ي`, no short vowels, tanween or shadda, and a Persian word shaped by a zero-width
non-joiner typed joined (`می‌شود` → `میشود`). Other scripts and every other field of a line
are kept. The number of queries changed is printed on standard error.
"""

import json
import sys
import unicodedata


# How a reader commonly types the letters of the Arabic script that a text spells otherwise.
ARABIC_AS_TYPED = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ة": "ه", "ى": "ي", "\u200c": None, "\u0640": None}
                                | {chr(c): None for c in range(0x064B, 0x0653)})


def without_accents(text):
    text = text.translate(ARABIC_AS_TYPED)
    letters = []
    for c in unicodedata.normalize("NFD", text):
        if unicodedata.category(c) == "Mn" and letters and "LATIN" in unicodedata.name(letters[-1], ""):
            continue
        letters.append(c)
    return unicodedata.normalize("NFC", "".join(letters)).replace("ß", "ss")


def main():
    changed = 0
    with open(sys.argv[1], encoding="utf-8") as queries:
        for line in queries:
            if not line.strip():
                continue
            query = json.loads(line)
            plain = without_accents(query["query"])
            changed += plain != query["query"]
            query["query"] = plain
            print(json.dumps(query, ensure_ascii=False))
    print(f"{changed} queries lost accents", file=sys.stderr)


if __name__ == "__main__":
    main()
