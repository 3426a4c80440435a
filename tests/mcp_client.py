"""Drives `situate mcp` with the official MCP Python SDK, over stdio, as an agent's client would.

Usage: mcp_client.py SITUATE_BINARY WORKSPACE

Runs one fixed scenario against the workspace (a copy of tests/data/workspace) and prints
what every step answered as one JSON object on stdout; tests/mcp.rs checks it. The
scenario: a first server lists its tools and answers each of them, good arguments and bad;
a file written meanwhile is found by the next search; a second server on the same folder
answers read-only, sees the first one's commits, and takes over the index when the first
exits. Nothing is asserted here, so that a failure shows in the Rust test with the whole
transcript.
"""

import asyncio
import json
import os
import pathlib
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TIMEOUT = 120


def answer(result):
    """A tool result as plain data: its error flag, structured content and text."""
    text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    return {"is_error": bool(result.is_error), "structured": result.structured_content, "text": text}


async def call(session, name, arguments):
    try:
        result = await session.call_tool(name, arguments, read_timeout_seconds=TIMEOUT)
        return answer(result)
    except Exception as e:  # a protocol error, or a result the SDK rejects
        return {"protocol_error": f"{type(e).__name__}: {e}"}


class Server:
    """One `situate mcp` process and a client session with it, run in a task of their own so
    that two servers can stop in any order."""

    def __init__(self, binary, workspace):
        # The SDK passes only a few variables on by default; the index lives under
        # XDG_CACHE_HOME.
        self.params = StdioServerParameters(
            # Neither server lets go of the index while idle (`--idle`): the scenario checks
            # that a server reads while another writes, and takes over when that one exits.
            command=binary, args=["mcp", "--dir", workspace, "--idle", "3600"], env=dict(os.environ)
        )
        self.session = None
        self.init = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task = None

    async def start(self):
        self._task = asyncio.create_task(self._run())
        await self._ready.wait()
        if self.session is None:
            await self._task  # raises what kept it from starting
        return self

    async def _run(self):
        try:
            async with stdio_client(self.params) as (read, write), ClientSession(read, write) as session:
                self.init = await session.initialize()
                self.session = session
                self._ready.set()
                await self._stop.wait()
        finally:
            self._ready.set()

    async def stop(self):
        self._stop.set()
        await self._task


async def scenario(binary, workspace):
    out = {}
    first = await Server(binary, workspace).start()
    init = first.init
    out["initialize"] = {
        "protocol_version": init.protocol_version,
        "server": init.server_info.name,
        "instructions": init.instructions,
        "tools_capability": init.capabilities.tools is not None,
    }
    s1 = first.session
    tools = await s1.list_tools()
    out["tools"] = [
        {
            "name": t.name,
            "description": t.description,
            "input_schema": t.input_schema,
            "output_schema": t.output_schema,
            "read_only": t.annotations.read_only_hint if t.annotations else None,
        }
        for t in tools.tools
    ]

    # Optional arguments may be given as null.
    out["search"] = await call(
        s1, "search", {"query": "how long are backups kept?", "k": 3, "paths": None, "mode": None}
    )
    out["search_paths"] = await call(s1, "search", {"query": "traffic", "paths": ["kitchen"]})
    out["search_bm25_window"] = await call(
        s1, "search", {"query": "rollback", "mode": "bm25", "expand": "window", "k": 1}
    )
    out["search_marked"] = await call(s1, "search", {"query": "error rate doubles", "k": 1})
    out["search_where"] = await call(s1, "search", {"query": "snapshots", "where": ["title=Backup Policy"]})
    out["error_where"] = await call(s1, "search", {"query": "snapshots", "where": ["title"]})
    out["search_where_nothing"] = await call(s1, "search", {"query": "snapshots", "where": ["title=No such note"]})
    out["search_small_budget"] = await call(
        s1, "search", {"query": "snapshot restore backups", "k": 10, "max_tokens": 300}
    )
    out["show_line"] = await call(s1, "show", {"path": "ops/backup.md:12"})
    out["show_file"] = await call(s1, "show", {"path": "ops/backup.md"})
    out["similar"] = await call(s1, "similar", {"path": "ops/deploy.md", "line": 8, "k": 3})
    # The e5 vectors are filled in the background while calls are answered; the status is
    # read once they are all in.
    out["status"] = await wait_for_vectors(s1)

    out["error_empty_query"] = await call(s1, "search", {"query": "   "})
    out["error_k"] = await call(s1, "search", {"query": "backups", "k": 500})
    out["error_budget"] = await call(s1, "search", {"query": "backups", "max_tokens": 10**6})
    out["error_unknown_argument"] = await call(s1, "search", {"query": "backups", "limit": 3})
    out["error_wrong_type"] = await call(s1, "search", {"query": "backups", "k": "three"})
    out["error_path_filter"] = await call(s1, "search", {"query": "backups", "paths": ["opz"]})
    out["error_missing_file"] = await call(s1, "show", {"path": "backup.md"})
    out["error_outside"] = await call(s1, "show", {"path": "../secrets.md"})
    out["error_folder"] = await call(s1, "show", {"path": "ops"})
    out["error_line"] = await call(s1, "show", {"path": "ops/deploy.md", "line": 400})
    out["error_unknown_tool"] = await call(s1, "reindex", {})
    # The server is still serving after all of that.
    out["after_errors"] = await call(s1, "search", {"query": "sourdough starter", "k": 1})

    # A file written between two calls is found by the next one.
    pathlib.Path(workspace, "ops", "oncall.md").write_text(
        "# On-call\n\nThe pager rotation changes every Monday at noon.\n"
    )
    out["search_new_file"] = await call(s1, "search", {"query": "pager rotation", "k": 1})

    # The SDK's own client negotiates the newest revision it knows (`server/discover`, then
    # `initialize` for a server that does not serve it), and reads the same answers.
    out["sdk_client"] = await sdk_client(binary, workspace)

    second = await Server(binary, workspace).start()
    s2 = second.session
    out["second_status"] = await call(s2, "status", {})
    out["second_search"] = await call(s2, "search", {"query": "how long are backups kept?", "k": 3})
    # The first server commits a change; the second reads the new commit.
    pathlib.Path(workspace, "kitchen", "tea.md").write_text(
        "# Tea\n\nGreen tea steeps for two minutes in water just off the boil.\n"
    )
    out["first_sees_tea"] = await call(s1, "search", {"query": "green tea steeping", "k": 1})
    out["second_sees_tea"] = await call(s2, "search", {"query": "green tea steeping", "k": 1})
    # The first server exits; the second takes the index over and writes it.
    await first.stop()
    out["second_status_after_first_exits"] = await wait_for_writer(s2)
    pathlib.Path(workspace, "kitchen", "coffee.md").write_text(
        "# Coffee\n\nThe espresso grinder is set to fourteen.\n"
    )
    out["second_sees_coffee"] = await call(s2, "search", {"query": "espresso grinder setting", "k": 1})
    # A sync tool or another program empties the chunk store's files under the server: the
    # call that meets the damage says so, and the next one rebuilds the index and answers.
    segments = [
        f
        for d in pathlib.Path(os.environ["XDG_CACHE_HOME"]).rglob("tantivy")
        if d.is_dir()
        for f in d.iterdir()
        if f.is_file() and f.suffix not in (".json", ".lock")
    ]
    for f in segments:
        os.truncate(f, 0)
    out["damaged_segments"] = len(segments)
    out["search_damaged"] = await call(s2, "search", {"query": "espresso grinder setting", "k": 1})
    out["search_rebuilt"] = await call(s2, "search", {"query": "espresso grinder setting", "k": 1})
    await second.stop()
    return out


async def sdk_client(binary, workspace):
    """A search through `mcp.client.Client`, as an agent built on the SDK makes it."""
    from mcp.client.client import Client

    params = StdioServerParameters(
        command=binary, args=["mcp", "--dir", workspace, "--idle", "3600"], env=dict(os.environ)
    )
    async with Client(params) as client:
        result = await client.call_tool("search", {"query": "how long are backups kept?", "k": 1})
        return {"protocol_version": client.session.protocol_version, **answer(result)}


async def wait_for_writer(session):
    """Status of `session` once it writes the index (the first server's exit takes a moment)."""
    status = None
    for _ in range(100):
        status = await call(session, "status", {})
        if (status.get("structured") or {}).get("writer"):
            break
        await asyncio.sleep(0.1)
    return status


async def wait_for_vectors(session):
    """Status of `session` once no vector is pending (the background fill takes a moment)."""
    status = None
    for _ in range(600):
        status = await call(session, "status", {})
        if ((status.get("structured") or {}).get("pending") or {}).get("vectors") == 0:
            break
        await asyncio.sleep(0.1)
    return status


def main():
    binary, workspace = sys.argv[1], sys.argv[2]
    out = asyncio.run(asyncio.wait_for(scenario(binary, workspace), TIMEOUT))
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
