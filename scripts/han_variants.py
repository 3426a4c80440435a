#!/usr/bin/env python3
"""Traditional and Simplified Chinese characters, by OpenCC (Apache-2.0), as Debian packages it.

    scripts/han_variants.py table                  # writes assets/han-variants/simplified.txt
    scripts/han_variants.py queries t2s|s2t FILE   # prints FILE's queries in the other script

`table` writes the table by which the analyzer folds each Traditional Chinese character into
its Simplified form (src/analysis/han.rs). The table is OpenCC's (Apache-2.0): Debian's `opencc` converts every Han character of the
Unicode blocks the analyzer folds, each on its own, from Traditional to Simplified
(`t2s.json`), and each character that comes out another single character is a line of the
table: the Traditional character, then the Simplified one. The packages are fetched with
`apt-get download` into a temporary folder (Debian's archive, no other network). The
Unicode Character Database's `kSimplifiedVariant` was tried first and left out: it lacks
common variants (`爲`, `啓`, `裏`, `淨`) and gives rare forms first (`鑑` as `𰾫`, where
Simplified text writes `鉴`), so such a character still missed its Simplified twin.
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

import debian_packages

OUT = pathlib.Path(__file__).resolve().parent.parent / "assets" / "han-variants" / "simplified.txt"
PACKAGES = ["opencc", "libopencc1.1", "libopencc-data", "libmarisa0"]

# The blocks of src/analysis/han.rs `is_han`: the unified ideographs and Extension A, the
# compatibility ideographs, and the planes of the later extensions.
BLOCKS = [(0x3400, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3FFFF)]


def convert(lines, config="t2s"):
    """Each of `lines` as OpenCC's `CONFIG.json` converts it, on its own."""
    with tempfile.TemporaryDirectory() as tmp:
        root = debian_packages.unpack(debian_packages.fetch(PACKAGES, tmp), pathlib.Path(tmp, "x")) / "usr"
        env = dict(os.environ, LD_LIBRARY_PATH=str(root / "lib" / "x86_64-linux-gnu"))
        config = root / "share" / "opencc" / f"{config}.json"
        out = subprocess.run(
            [str(root / "bin" / "opencc"), "-c", str(config)],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout
    converted = out.split("\n")[: len(lines)]
    assert len(converted) == len(lines), "opencc gave fewer lines than it was given"
    return converted


def table():
    chars = [chr(c) for first, last in BLOCKS for c in range(first, last + 1)]
    table = {c: s for c, s in zip(chars, convert(chars)) if s != c and len(s) == 1}
    # Folding twice must be folding once: a form that is folded in turn is followed.
    for traditional in table:
        seen = {traditional}
        while table[traditional] in table and table[traditional] not in seen:
            seen.add(table[traditional])
            table[traditional] = table[table[traditional]]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(f"{t}{s}\n" for t, s in sorted(table.items())), encoding="utf-8")
    print(f"{len(table)} characters in {OUT}")


def queries(config, path):
    """The query file at `path` with each query converted by OpenCC's `config` (`s2t`:
    Simplified to Traditional, `t2s` the other way), phrase by phrase as a reader's input
    method would write it; everything else (the gold passages' quotes) as it was."""
    rows = [json.loads(line) for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines() if line]
    converted = convert([row["query"] for row in rows], config)
    changed = 0
    for row, query in zip(rows, converted):
        changed += query != row["query"]
        row["query"] = query
        print(json.dumps(row, ensure_ascii=False))
    print(f"{changed} of {len(rows)} queries in the other script", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:2] == ["table"]:
        table()
    elif sys.argv[1:2] == ["queries"] and len(sys.argv) == 4 and sys.argv[2] in ("t2s", "s2t"):
        queries(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
