#!/usr/bin/env python3
"""The Neovim plugin as a user sees it: Neovim in a real terminal (tmux), keys typed in.

The headless test (e2e.lua) checks what the plugin does through Neovim's API; this one
checks what reaches the screen. Neovim runs the plugin against the real server in a tmux
pane of 120 x 40 cells; the test types commands and keys, and reads the pane with
`tmux capture-pane` (with its colours, so that highlights can be checked): the search
picker, the passage opened at its line with the matched words highlighted, the quickfix
list and the hover. Each step saves what the pane showed to target/e2e/nvim/; a failure
names the step.

Usage: terminal.py (SITUATE_BIN, else target/debug/situate, is the server)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

PLUGIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(os.path.dirname(PLUGIN))
ARTIFACTS = os.path.join(REPO, "target", "e2e", "nvim")
QUERY = "how long are backups kept"
WIDTH, HEIGHT = 120, 40


class StepFailed(Exception):
    pass


class Pane:
    """Neovim in a tmux server of its own (its own socket: the user's tmux is never touched)."""

    def __init__(self, workspace, init, env):
        self.socket = f"situate-e2e-{os.getpid()}"
        self.env = env
        self.tmux(
            "-f", "/dev/null", "new-session", "-d", "-x", str(WIDTH), "-y", str(HEIGHT), "-c", workspace,
            f"nvim -u {init} -i NONE -n ops/deploy.md",
        )

    def tmux(self, *args):
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], env=self.env, check=True, capture_output=True, text=True
        ).stdout

    def keys(self, *keys):
        self.tmux("send-keys", *keys)

    def type(self, text):
        # -l: the text as typed, not key names.
        self.tmux("send-keys", "-l", text)

    def text(self):
        return self.tmux("capture-pane", "-p")

    def styled(self):
        """The pane with its colours as SGR escape sequences."""
        return self.tmux("capture-pane", "-p", "-e")

    def wait_for(self, pattern, timeout=30):
        """Waits until the pane shows `pattern` (a regular expression); returns the match."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.text()
            found = re.search(pattern, screen, re.MULTILINE)
            if found:
                return found
            if time.monotonic() > deadline:
                raise StepFailed(f"the pane never showed {pattern!r}; it shows:\n{screen}")
            time.sleep(0.2)

    def close(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], env=self.env, capture_output=True)


def styles_of_line(styled_line):
    """Each character of a captured line with the SGR parameters in force on it."""
    out, state = [], ()
    for token in re.finditer(r"\x1b\[([0-9;]*)m|(.)", styled_line):
        if token.group(2) is not None:
            out.append((token.group(2), state))
            continue
        params = token.group(1)
        state = () if params in ("", "0") else state + tuple(params.split(";"))
    return out


def has_background(state):
    """Whether SGR parameters set a background colour (40–47, 100–107, 48;…)."""
    params = list(state)
    background = False
    i = 0
    while i < len(params):
        p = params[i]
        if p == "49":
            background = False
        elif p == "48":
            background = True
            i += 2 if i + 1 < len(params) and params[i + 1] == "5" else 4
        elif p.isdigit() and (40 <= int(p) <= 47 or 100 <= int(p) <= 107):
            background = True
        elif p == "0":
            background = False
        i += 1
    return background


def highlighted_words(styled_line):
    """The runs of characters drawn on a background colour, as words."""
    words, current = [], ""
    for char, state in styles_of_line(styled_line):
        if has_background(state) and char.strip():
            current += char
        else:
            if current:
                words.append(current)
            current = ""
    if current:
        words.append(current)
    return words


def main():
    if shutil.which("tmux") is None or shutil.which("nvim") is None:
        missing = " and ".join(t for t in ("tmux", "nvim") if shutil.which(t) is None)
        message = f"the Neovim terminal test needs {missing} (apt-get install tmux neovim)"
        if os.environ.get("CI") == "true":
            print(f"editors/nvim/test/terminal.py: {message}", file=sys.stderr)
            return 1
        print(f"editors/nvim/test/terminal.py: skipped: {message}", file=sys.stderr)
        return 0
    binary = os.path.abspath(os.environ.get("SITUATE_BIN") or os.path.join(REPO, "target", "debug", "situate"))
    if not os.access(binary, os.X_OK):
        print(f"editors/nvim/test/terminal.py: no server binary at {binary} (cargo build, or set SITUATE_BIN)", file=sys.stderr)
        return 1

    os.makedirs(ARTIFACTS, exist_ok=True)
    for old in os.listdir(ARTIFACTS):
        os.remove(os.path.join(ARTIFACTS, old))
    tmp = tempfile.mkdtemp(prefix="situate-nvim-terminal-")
    workspace = os.path.join(tmp, "workspace")
    shutil.copytree(os.path.join(REPO, "tests", "data", "workspace"), workspace)
    open(os.path.join(workspace, "situate.toml"), "w").close()
    init = os.path.join(tmp, "init.lua")
    with open(init, "w") as f:
        f.write(
            f"""vim.opt.runtimepath:prepend({PLUGIN!r})
vim.o.ruler = true
vim.o.laststatus = 2
vim.o.shortmess = vim.o.shortmess .. "I"
vim.o.swapfile = false
require("situate").setup({{ cmd = {{ {binary!r}, "lsp" }} }})
"""
        )
    env = dict(os.environ)
    for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        env[name] = os.path.join(tmp, name.lower())
    env["TERM"] = "xterm-256color"
    env["SITUATE_LOG_FILE"] = os.path.join(tmp, "server.log")
    env.pop("TMUX", None)

    pane = Pane(workspace, init, env)
    number = 0

    def step(name, body):
        nonlocal number
        number += 1
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        started = time.monotonic()
        try:
            body()
            with open(os.path.join(ARTIFACTS, f"{number:02d}-{slug}.txt"), "w") as f:
                f.write(pane.text())
            print(f"ok {number} - {name} ({time.monotonic() - started:.1f} s)")
        except (StepFailed, subprocess.CalledProcessError) as error:
            screen = pane.text()
            with open(os.path.join(ARTIFACTS, f"{number:02d}-{slug}-FAILED.txt"), "w") as f:
                f.write(screen)
            print(f"not ok {number} - {name}", file=sys.stderr)
            print(f"editors/nvim/test/terminal.py: the step \"{name}\" failed: {error}", file=sys.stderr)
            log = os.path.join(tmp, "server.log")
            if os.path.exists(log):
                print("--- server log (last 20 lines)", file=sys.stderr)
                print("".join(open(log).readlines()[-20:]), file=sys.stderr)
            raise

    def check(condition, message):
        if not condition:
            raise StepFailed(message)

    def open_file():
        pane.wait_for(r"Releases go out on Tuesdays")

    def index_ready():
        # As a user would: ask for the status until the folder is ready.
        deadline = time.monotonic() + 60
        while True:
            pane.keys("Escape")
            pane.type(":Situate status")
            pane.keys("Enter")
            try:
                pane.wait_for(r"workspace: ready\n\s+4 files, 8 chunks", timeout=3)
                break
            except StepFailed:
                if time.monotonic() > deadline:
                    raise
        pane.keys("Enter")  # past the "Press ENTER" prompt of a message of several lines

    def picker():
        pane.type(f":Situate search {QUERY}")
        pane.keys("Enter")
        pane.wait_for(r"Type number and <Enter>")
        screen = pane.text()
        check(f'situate: "{QUERY}"' in screen, f"the picker has no prompt naming the query:\n{screen}")
        first = re.search(r"^1: (.*)$", screen, re.MULTILINE)
        check(first is not None, f"the picker lists no hits:\n{screen}")
        check(
            first.group(1).startswith("Backup policy › Backups › Retention — Snapshots are kept for thirty days."),
            f"the first hit is not the retention paragraph with its heading path: {first.group(1)}",
        )

    def choose_first():
        pane.type("1")
        pane.keys("Enter")
        pane.wait_for(r"ops/backup\.md")
        pane.wait_for(r"ops/backup\.md\s+10,1\s", timeout=10)  # the ruler: the passage starts at line 10
        line = next((l for l in pane.styled().split("\n") if "Snapshots are" in re.sub(r"\x1b\[[0-9;]*m", "", l)), None)
        check(line is not None, f"the passage is not on screen:\n{pane.text()}")
        words = highlighted_words(line)
        check("kept" in words, f"'kept' is not highlighted on the passage's line; highlighted: {words}")
        check("thirty" not in words, f"words that did not match are highlighted: {words}")

    def quickfix():
        pane.type(f":Situate search! {QUERY}")
        pane.keys("Enter")
        found = pane.wait_for(r"^(ops/backup\.md\|12 col (\d+)\| Backup policy › Backups › Retention — Snapshots are kept.*)$")
        check("[Quickfix List]" in pane.text(), f"no quickfix window:\n{pane.text()}")
        column = int(found.group(2))
        check(column == 15, f"the quickfix entry is not on the matched word 'kept' (column {column})")
        # Enter on the first entry jumps to it.
        pane.keys("Enter")
        pane.wait_for(r"ops/backup\.md\s+12,15\s", timeout=10)

    def hover():
        pane.keys("Escape")
        pane.type("K")
        pane.wait_for(r"Indexed with the context")
        screen = pane.text()
        check("Backups › Retention" in screen, f"the hover lacks the heading path:\n{screen}")
        check("Document: Backup policy > Backups > Retention" in screen, f"the hover lacks the context:\n{screen}")
        check("lines 10–13" in screen, f"the hover lacks the chunk's lines:\n{screen}")

    nvim_version = subprocess.run(["nvim", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    tmux_version = subprocess.run(["tmux", "-V"], capture_output=True, text=True).stdout.strip()
    print(f"editors/nvim terminal: {nvim_version}, {tmux_version}")
    try:
        step("nvim opens a file of the workspace", open_file)
        step(":Situate status shows the index ready", index_ready)
        step(f":Situate search {QUERY} lists the retention paragraph first, with its heading path", picker)
        step("choosing it opens ops/backup.md at the passage with the matched word highlighted", choose_first)
        step(":Situate search! fills the quickfix list, and Enter jumps to the matched word", quickfix)
        step("K shows how the passage under the cursor was indexed", hover)
    except (StepFailed, subprocess.CalledProcessError):
        return 1
    finally:
        pane.keys("Escape")
        pane.type(":qa!")
        pane.keys("Enter")
        time.sleep(0.3)
        pane.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"editors/nvim terminal: all {number} steps passed; the panes are in {ARTIFACTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
