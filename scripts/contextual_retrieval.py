#!/usr/bin/env python3
"""Turns Anthropic's contextual-retrieval evaluation data into a folder and a query file
that `situate eval` reads.

    python3 scripts/contextual_retrieval.py ../shared/data/contextual-retrieval OUT
    situate eval OUT/queries.jsonl --dir OUT/docs

Each document becomes OUT/docs/<doc_id>.txt; each golden chunk becomes a gold location
(the line range of the chunk's text in its document). The chunks are verbatim substrings of
their documents; when a chunk's text occurs more than once, the occurrence after the
previous chunk is taken, which is how the chunks were cut. The Pass@k that `situate eval`
reports is the metric of Anthropic's notebook: per query, the share of its golden chunks
found in the top k, averaged over queries.
"""

import json
import os
import sys


def line_range(content, start, end):
    first = content.count("\n", 0, start) + 1
    last = content.count("\n", 0, max(start, end - 1)) + 1
    return first, last


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    docs_dir = os.path.join(out, "docs")
    os.makedirs(docs_dir, exist_ok=True)
    with open(os.path.join(src, "codebase_chunks.json"), encoding="utf-8") as f:
        docs = json.load(f)
    where = {}
    for doc in docs:
        name = doc["doc_id"] + ".txt"
        content = doc["content"]
        with open(os.path.join(docs_dir, name), "w", encoding="utf-8", newline="") as f:
            f.write(content)
        cursor = 0
        for chunk in sorted(doc["chunks"], key=lambda c: c["original_index"]):
            text = chunk["content"]
            at = content.find(text, cursor)
            if at < 0:
                at = content.find(text)
            if at < 0:
                sys.exit(f"chunk {chunk['chunk_id']} is not a substring of {name}")
            cursor = at + 1
            where[(doc["original_uuid"], chunk["original_index"])] = (name, *line_range(content, at, at + len(text)))
    n = 0
    with open(os.path.join(src, "evaluation_set.jsonl"), encoding="utf-8") as f, open(
        os.path.join(out, "queries.jsonl"), "w", encoding="utf-8"
    ) as q:
        for i, line in enumerate(f):
            if not line.strip():
                continue
            item = json.loads(line)
            gold = []
            for uuid, index in item["golden_chunk_uuids"]:
                path, start, end = where[(uuid, index)]
                gold.append({"path": path, "start_line": start, "end_line": end})
            q.write(json.dumps({"id": f"cr{i + 1:03d}", "query": item["query"], "gold": gold}) + "\n")
            n += 1
    print(f"{len(docs)} documents in {docs_dir}, {n} queries in {os.path.join(out, 'queries.jsonl')}")


if __name__ == "__main__":
    main()
