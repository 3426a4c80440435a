#!/usr/bin/env python3
"""Turns one of Debian's books in one language into a tree of markdown files, for measuring
search over real text in that language:

    scripts/debian_docs.py BOOK LANG OUT_DIR [DEB_FILE]

BOOK is `reference` (the Debian Reference, Osamu Aoki, GPL-2+), `faq` (the Debian FAQ,
GPL-2+), `install` (the Debian Installation Guide for amd64, GPL-2+) or `handbook` (the
Debian Administrator's Handbook, Raphaël Hertzog and Roland Mas, GPL-2+ or CC-BY-SA 3.0);
LANG a Debian package suffix (`ja`, `zh-cn`, `ko`, ...) or, for the Installation Guide and
the Handbook, whose one package holds every language, the name of its folder there (`ko`,
`zh_CN`; `ar-MA`, `fa-IR`). Without DEB_FILE the package (`debian-reference-LANG`,
`debian-faq-LANG`, `installation-guide-amd64`, `debian-handbook`) is fetched with
`apt-get download` (Debian's archive, no other network). Each HTML chapter becomes a
folder `NAME/` of the Reference's numbered sections of the second level, one file each
(`ch01/01-slug.md`), or a file `NAME.md` of the FAQ's (whose sections are single
questions), of the Installation Guide's pages (one section each) and of the Handbook's
pages (one section each, named after it: `sect.apt-get.html` is `apt-get.md`; the text it
has not translated yet is in English), opened by its title,
its subsections one level deeper each; paragraphs, lists, tables, command screens
(fenced) and inline code are kept, links and images become their text. The output is
deterministic, so query files can name its lines.
"""

import html
import html.parser
import os
import pathlib
import re
import shutil
import sys
import tempfile

import debian_packages

# Blocks whose text is not the book's: navigation, tables of contents, lists of tables.
SKIPPED_DIV_CLASSES = {"navheader", "navfooter", "toc", "list-of-tables", "list-of-figures"}
# Publican's banner above each page of the Handbook.
SKIPPED_DIV_IDS = {"banner"}


# Where each book's pages are in its package, and whether a chapter is one file.
BOOKS = {
    "reference": ("debian-reference-{lang}", "usr/share/debian-reference", False, "*.{lang}.html"),
    "faq": ("debian-faq-{lang}", "usr/share/doc/debian/FAQ/{lang}", True, "*.{lang}.html"),
    "install": ("installation-guide-amd64", "usr/share/doc/installation-guide-amd64/{lang}", True, "*.html"),
    "handbook": ("debian-handbook", "usr/share/doc/debian-handbook/html/{lang}", True, "*.html"),
}


def is_wide(c):
    """A letter written without spaces between words (Han, kana) or full-width punctuation:
    the HTML source breaks its lines at spaces only, but a break between two such letters
    must not become a space the author never wrote. Hangul is not one: Korean spaces its
    words, and a break there stands for a space."""
    o = ord(c)
    return 0x2E80 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0xFF00 <= o <= 0xFFEF


def join_lines(text):
    """Collapses the source's line breaks and runs of spaces as a browser would."""
    parts = [p.strip() for p in text.split("\n")]
    out = ""
    for p in parts:
        if not p:
            continue
        if out and not (is_wide(out[-1]) and is_wide(p[0])):
            out += " "
        out += p
    return re.sub(r"[ \t]+", " ", out)


class Book(html.parser.HTMLParser):
    """Collects one chapter's sections as (level, anchor, title, markdown lines)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections = []  # [level, anchor, title, [lines]]
        self.skip_depth = 0  # > 0 inside a skipped div
        self.div_stack = []  # whether each open div started a skip
        self.inline = None  # the text of the block being read, or None
        self.block = None  # "p", "li", "td", "th", "title", "pre"
        self.heading = None  # (level, anchor)
        self.lists = []  # "ul" / "ol" with item counters
        self.row = None
        self.rows = None
        self.table_depth = 0
        self.pre = None
        self.in_docnav = False  # inside Publican's list of links to other pages

    # -- structure ---------------------------------------------------------------------
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div":
            classes = set((a.get("class") or "").split())
            skip = bool(classes & SKIPPED_DIV_CLASSES) or a.get("id") in SKIPPED_DIV_IDS
            # Publican's pages (the Handbook) hold a paragraph in a div of class `para`.
            para = "para" in classes and not self.skip_depth and self.block is None
            self.div_stack.append("skip" if skip else "para" if para else None)
            if skip:
                self.skip_depth += 1
            if para:
                self.inline = ""
                self.block = "p"
            return
        if self.skip_depth:
            return
        if tag == "ul" and "docnav" in (a.get("class") or "").split():
            # Publican's links to the previous and next pages.
            self.in_docnav = True
            self.skip_depth += 1
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6") and "title" in (a.get("class") or ""):
            self.heading = [int(tag[1]), None]
            self.inline = ""
            self.block = "title"
        elif tag == "a" and self.heading is not None and a.get("id") and self.heading[1] is None:
            self.heading[1] = a["id"]
        elif tag == "pre":
            self.pre = ""
            self.block = "pre"
        elif tag == "p" and self.block is None:
            self.inline = ""
            self.block = "p"
        elif tag in ("ul", "ol"):
            self.lists.append([tag, 0])
        elif tag == "li" and self.lists:
            self.flush()
            self.lists[-1][1] += 1
            self.inline = ""
            self.block = "li"
        elif tag == "table":
            self.flush()
            self.table_depth += 1
            if self.table_depth == 1:
                self.rows = []
        elif tag == "tr" and self.rows is not None:
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.inline = ""
            self.block = "cell"
        elif tag == "br" and self.inline is not None:
            self.inline += "\n"
        elif tag == "code" and self.inline is not None and self.block != "pre":
            self.inline += "`"
        elif tag == "em" and self.inline is not None:
            self.inline += "*"

    def handle_endtag(self, tag):
        if tag == "div":
            kind = self.div_stack.pop() if self.div_stack else None
            if kind == "skip":
                self.skip_depth -= 1
            elif kind == "para" and self.block == "p":
                self.flush()
            return
        if tag == "ul" and self.in_docnav:
            self.in_docnav = False
            self.skip_depth -= 1
            return
        if self.skip_depth:
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6") and self.block == "title":
            title = join_lines(self.inline)
            level, anchor = self.heading
            self.sections.append([level, anchor or "", title, []])
            self.heading, self.inline, self.block = None, None, None
        elif tag == "pre" and self.pre is not None:
            body = self.pre.strip("\n")
            self.emit(["```", *body.split("\n"), "```"])
            self.pre, self.block = None, None
        elif tag == "p" and self.block == "p":
            self.flush()
        elif tag == "li" and self.block == "li":
            self.flush()
        elif tag in ("ul", "ol") and self.lists:
            self.flush()
            self.lists.pop()
        elif tag in ("td", "th") and self.block == "cell":
            cell = join_lines(self.inline.replace("`", "`")).replace("|", "\\|")
            if self.row is not None:
                self.row.append(cell)
            self.inline, self.block = None, None
        elif tag == "tr" and self.row is not None:
            if any(self.row):
                self.rows.append(self.row)
            self.row = None
        elif tag == "table" and self.table_depth:
            self.table_depth -= 1
            if self.table_depth == 0:
                self.emit_table(self.rows or [])
                self.rows = None
        elif tag == "code" and self.inline is not None and self.block != "pre":
            self.inline += "`"
        elif tag == "em" and self.inline is not None:
            self.inline += "*"

    def handle_data(self, data):
        if self.skip_depth:
            return
        if self.pre is not None:
            self.pre += data
        elif self.inline is not None:
            self.inline += data

    # -- output ------------------------------------------------------------------------
    def flush(self):
        if self.inline is None or self.block not in ("p", "li"):
            return
        text = join_lines(self.inline).replace("``", "")
        if text:
            if self.block == "li":
                depth = max(len(self.lists) - 1, 0)
                kind, n = self.lists[-1] if self.lists else ("ul", 1)
                marker = f"{n}." if kind == "ol" else "-"
                self.emit(["  " * depth + f"{marker} {text}"], spaced=False)
            else:
                self.emit([text])
        self.inline, self.block = None, None

    def emit_table(self, rows):
        if not rows:
            return
        if len(rows) <= 2 and not rows[0][0] and len(rows[0]) <= 2:
            # An admonition (note, warning) is a table of an icon cell, its label and its
            # text: it is a paragraph opened by its label.
            label = rows[0][-1]
            text = " ".join(c for r in rows[1:] for c in r if c)
            self.emit([f"**{label}**", "", text] if text else [f"**{label}**"])
            return
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        self.emit(lines)

    def emit(self, lines, spaced=True):
        if not self.sections:
            self.sections.append([1, "", "", []])
        body = self.sections[-1][3]
        if spaced and body and body[-1] != "":
            body.append("")
        if not spaced and body and body[-1] != "" and not re.match(r"\s*(-|\d+\.) ", body[-1]):
            body.append("")
        body.extend(lines)


def slug(anchor, n):
    words = re.sub(r"[^a-z0-9]+", "-", anchor.lower()).strip("-")
    return f"{n:02d}-{words[:60].rstrip('-') or 'section'}"


def write_chapter(html_path, out_dir, chapter, whole):
    book = Book()
    book.feed(html_path.read_text(encoding="utf-8"))
    files = []  # [name, [lines]]
    for level, anchor, title, body in book.sections:
        if whole:
            if not files:
                files.append([chapter, []])
            heading = "#" * max(level, 1)
        elif level <= 2 or not files:
            name = "00-intro" if level <= 1 else slug(anchor, len(files))
            files.append([name, []])
            heading = "#"
        else:
            heading = "#" * (level - 1)
        lines = files[-1][1]
        if title:
            if lines:
                lines.append("")
            lines.append(f"{heading} {title}")
        if body:
            lines.append("")
            lines.extend(body)
    folder = out_dir if whole else out_dir / chapter
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in files:
        if any(l.strip() for l in lines):
            (folder / f"{name}.md").write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in BOOKS:
        sys.exit(__doc__)
    book, lang, out_dir = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    package, pages, whole, pattern = BOOKS[book]
    with tempfile.TemporaryDirectory() as tmp:
        debs = [sys.argv[4]] if len(sys.argv) == 5 else debian_packages.fetch([package.format(lang=lang)], tmp)
        debian_packages.unpack(debs, pathlib.Path(tmp, "x"))
        src = pathlib.Path(tmp) / "x" / pages.format(lang=lang)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.mkdir(parents=True)
        for page in sorted(src.glob(pattern.format(lang=lang))):
            # The Handbook names a section's page after it (`sect.apt-get.html`).
            stem = page.name.removesuffix(".html").removeprefix("sect.") if book == "handbook" else page.name.split(".")[0]
            if stem == "index":
                continue
            write_chapter(page, out_dir, stem, whole)
    count = sum(1 for _ in out_dir.rglob("*.md"))
    print(f"{count} files in {out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
