#!/usr/bin/env python3
"""Turns Debian's translated manual pages in one language into a tree of markdown files, for
measuring search over real technical text in that language:

    scripts/man_pages.py LANG OUT_DIR [DEB_DIR]

LANG is a Debian package suffix (`de`, `fr`, `zh`, `ru`, `pl`, `sv`, `tr`...); the pages of a package with
several (`manpages-zh` holds `zh_CN` and `zh_TW`) are chosen by `--locale`, `zh_CN` by
default for `zh`. Without DEB_DIR, `manpages-LANG` and `mandoc` are fetched with `apt-get download`
(Debian's archive, no other network) into a scratch folder; with it, their `.deb` files are
read from there. Each page of sections 1, 5 and 8 becomes `manN/NAME.md`: its title
(`# tar(1): tar - ein Archivierungswerkzeug`), each section a `##` heading and each
subsection a `###` one, paragraphs as mandoc lays them out, one line each. The output is
deterministic, so query files can name its lines. The pages are under the licences of
their programs (see each package's copyright file).
"""

import glob
import gzip
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import debian_packages

SECTIONS = ("1", "5", "8")
DEFAULT_LOCALE = {"zh": "zh_CN"}


def render(mandoc, source):
    """The page laid out as text by mandoc: wide lines, no overstrike."""
    out = subprocess.run(
        [mandoc, "-T", "utf8", "-O", "width=1000"], input=source, capture_output=True, check=False
    ).stdout
    text = out.decode("utf-8", "replace")
    # Bold and underline are drawn by overstriking (`x\bx`, `_\bx`): keep the letter.
    return re.sub(r".\x08", "", text)


def to_markdown(page, section, text):
    """The laid-out page as markdown (see the module's doc)."""
    lines = text.replace("\t", "        ").split("\n")
    # The first and last lines are the page's header and footer.
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    lines = lines[1:-1]
    out = []
    name_line = None
    heading = None
    for line in lines:
        stripped = line.strip()
        if not stripped:
            if out and out[-1] != "":
                out.append("")
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0:
            heading = stripped
            out += ["", f"## {stripped}", ""]
        elif indent <= 4:
            out += ["", f"### {stripped}", ""]
        else:
            if name_line is None and heading is not None:
                name_line = stripped
            # A leading `#` (a root prompt, a comment) or list marker is text, not markup.
            if re.match(r"^([#>]|[-*+] |\d+[.)] )", stripped):
                stripped = "\\" + stripped
            out.append(stripped)
    title = f"# {page}({section})" + (f": {name_line}" if name_line else "")
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(out).strip())
    return f"{title}\n\n{body}\n"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--locale=")]
    locales = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--locale=")]
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    lang, out_dir = args[0], pathlib.Path(args[1])
    locale = locales[0] if locales else DEFAULT_LOCALE.get(lang, lang)
    with tempfile.TemporaryDirectory() as scratch:
        debs = args[2] if len(args) == 3 else scratch
        if len(args) == 2:
            debian_packages.fetch([f"manpages-{lang}", "mandoc"], scratch)
        tree = os.path.join(scratch, "tree")
        debian_packages.unpack(
            sorted(glob.glob(os.path.join(debs, f"manpages-{lang}_*.deb")))
            + sorted(glob.glob(os.path.join(debs, "mandoc_*.deb"))),
            tree,
        )
        mandoc = os.path.join(tree, "usr/bin/mandoc")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        written = 0
        for section in SECTIONS:
            pages = sorted(glob.glob(os.path.join(tree, f"usr/share/man/{locale}/man{section}/*.gz")))
            for path in pages:
                base = os.path.basename(path)[: -len(".gz")]
                page, _, _ = base.rpartition(".")
                with gzip.open(path) as f:
                    source = f.read()
                text = render(mandoc, source)
                if not text.strip():
                    continue
                target = out_dir / f"man{section}" / f"{page}.md"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(to_markdown(page, section, text), encoding="utf-8")
                written += 1
        print(f"{written} pages of manpages-{lang} ({locale}) in {out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
