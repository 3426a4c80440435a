-- End-to-end test of the Neovim plugin against the real server; test/run.sh runs it headless.
--
-- Each check appends "ok <name>" to $SITUATE_TEST_RESULTS; the first failure appends
-- "not ok <name>: <why>" and quits with exit code 1.

local workspace = assert(os.getenv("SITUATE_TEST_WORKSPACE"), "SITUATE_TEST_WORKSPACE is not set")
local results_path = assert(os.getenv("SITUATE_TEST_RESULTS"), "SITUATE_TEST_RESULTS is not set")
local server = assert(os.getenv("SITUATE_BIN"), "SITUATE_BIN is not set")
local help_dir = assert(os.getenv("SITUATE_TEST_HELP"), "SITUATE_TEST_HELP is not set")

local results = assert(io.open(results_path, "w"))

local function record(line)
  results:write(line, "\n")
  results:flush()
end

local function finish(code)
  results:close()
  local compat = require("situate.compat")
  for _, client in ipairs(compat.clients()) do
    compat.stop(client)
  end
  vim.wait(2000, function()
    return #compat.clients() == 0
  end, 50)
  vim.cmd(code == 0 and "qall!" or "cquit! " .. code)
end

local function check(name, condition, detail)
  if not condition then
    error({ check = name, detail = detail or "" }, 0)
  end
  record("ok " .. name)
end

local function wait_for(what, timeout_ms, condition)
  if not vim.wait(timeout_ms, condition, 50) then
    error({ check = what, detail = "timed out after " .. timeout_ms .. " ms" }, 0)
  end
end

local function realpath(path)
  return vim.loop.fs_realpath(path) or path
end

local function ends_with(text, suffix)
  return text:sub(-#suffix) == suffix
end

-- Messages shown with vim.notify, kept for the checks.
local messages = {}
vim.notify = function(message, level)
  table.insert(messages, { message = message, level = level })
end

local function last_message(pattern)
  for i = #messages, 1, -1 do
    if messages[i].message:find(pattern, 1, true) then
      return messages[i]
    end
  end
  return nil
end

-- vim.ui.select records what it was given and chooses the first item.
local selections = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(selections, { items = items, opts = opts })
  on_choice(items[1], 1)
end

local function situate_client()
  return require("situate.compat").buffer_client(vim.api.nvim_get_current_buf())
end

local function status(client)
  local response = require("situate.compat").request_sync(client, "workspace/executeCommand", {
    command = "situate.status",
    arguments = { vim.empty_dict() },
  }, 5000)
  return response and response.result
end

local function test_help()
  vim.cmd("helptags " .. vim.fn.fnameescape(help_dir .. "/doc"))
  local tags = table.concat(vim.fn.readfile(help_dir .. "/doc/tags"), "\n")
  for _, tag in ipairs({ "situate.txt", ":Situate", "situate-setup", "situate-health", "situate-snippets" }) do
    check("help tag " .. tag, tags:find(tag .. "\t", 1, true) ~= nil, "missing from doc/tags")
  end
  vim.opt.runtimepath:append(help_dir)
  vim.cmd("help situate-commands")
  check("help opens", ends_with(vim.api.nvim_buf_get_name(0), "situate.txt"), vim.api.nvim_buf_get_name(0))
  vim.cmd("helpclose")
end

local function test_attach()
  vim.cmd("edit " .. vim.fn.fnameescape(workspace .. "/ops/backup.md"))
  check("filetype markdown", vim.bo.filetype == "markdown", vim.bo.filetype)
  wait_for("client attached", 10000, function()
    return situate_client() ~= nil
  end)
  local client = situate_client()
  check("client attached", client ~= nil)
  check("root is the folder of situate.toml", realpath(client.config.root_dir) == realpath(workspace),
    tostring(client.config.root_dir))
  wait_for("client initialized", 10000, function()
    return client.initialized == true
  end)
  check("K maps to hover", vim.fn.maparg("K", "n") ~= "", "no K mapping in the buffer")

  -- The server reports "ready" for a moment after opening a new index and before its
  -- first run starts (index null, then 0 files), so wait for the files as well.
  local ready
  wait_for("index ready", 60000, function()
    local answer = status(client)
    ready = answer and answer.folders and answer.folders[1]
    return ready ~= nil and ready.phase == "ready" and ready.index ~= vim.NIL and ready.index.files > 0
  end)
  check("index ready", ready.index.files == 4 and ready.index.chunks > 0,
    string.format("%s files, %s chunks", tostring(ready.index.files), tostring(ready.index.chunks)))
  record(string.format("# indexed %d files, %d chunks", ready.index.files, ready.index.chunks))

  -- A second file of the same workspace shares the client.
  vim.cmd("edit " .. vim.fn.fnameescape(workspace .. "/journal/2026-03-02.txt"))
  check("filetype text", vim.bo.filetype == "text", vim.bo.filetype)
  wait_for("text buffer attached", 5000, function()
    return situate_client() ~= nil
  end)
  check("one client per root", situate_client().id == client.id and #require("situate.compat").clients() == 1)
  -- An MDX buffer too (Neovim 0.10 and later name .mdx files so; 0.7 leaves them unnamed),
  -- never written, so the folder keeps its files.
  vim.cmd("edit " .. vim.fn.fnameescape(workspace .. "/draft.mdx"))
  vim.bo.filetype = "mdx"
  wait_for("mdx buffer attached", 5000, function()
    return situate_client() ~= nil
  end)
  check("mdx buffer attached", situate_client() ~= nil and situate_client().id == client.id)
  vim.cmd("bwipeout!")
  return client
end

local function test_search()
  -- Start from another file, so that choosing the hit has to open ops/backup.md.
  vim.cmd("edit " .. vim.fn.fnameescape(workspace .. "/kitchen/bread.md"))
  vim.cmd("Situate search backup retention")
  wait_for("vim.ui.select called", 10000, function()
    return #selections == 1
  end)
  local items = selections[1].items
  local first = items[1]
  check("search has hits", #items > 0)
  check("first hit is ops/backup.md", first.path == "ops/backup.md", first.path)
  check("first hit is Backups › Retention", table.concat(first.heading_path, " › ") == "Backups › Retention",
    table.concat(first.heading_path, " › "))
  local wide = require("situate.commands").format_hit(first, 200)
  check("item shows title, heading path, preview and score",
    wide:find("^Backup policy › Backups › Retention — Snapshots are kept for thirty days%..* %(%d%.%d%d%d%)$") ~= nil, wide)
  local line = selections[1].opts.format_item(first)
  record("# first item: " .. line)
  check("item fits the screen", vim.fn.strdisplaywidth(line) <= vim.o.columns - 6
    and line:find("^Backup policy › .*Retention — Snapshots are kept.*… %(%d%.%d%d%d%)$") ~= nil,
    vim.o.columns .. " columns: " .. line)
  wait_for("hit opened", 5000, function()
    return ends_with(vim.api.nvim_buf_get_name(0), "/ops/backup.md")
  end)
  local cursor = vim.api.nvim_win_get_cursor(0)
  check("hit opened ops/backup.md at line 10", cursor[1] == 10 and cursor[1] == first.range.start.line + 1,
    "cursor at line " .. cursor[1])
  check("line 10 is ## Retention", vim.api.nvim_get_current_line() == "## Retention", vim.api.nvim_get_current_line())
end

local function test_matched_words()
  local before = #selections
  vim.cmd("Situate search legal hold")
  wait_for("search for legal hold", 10000, function()
    return #selections == before + 1
  end)
  local hit = selections[#selections].items[1]
  check("the preview is the line that matched", hit.preview == "legal hold is placed on them.", hit.preview)
  local client = situate_client()
  local terms = require("situate.commands").matched_terms(hit, client.offset_encoding)
  check("the preview's marked words", table.concat(terms, ",") == "legal,hold", table.concat(terms, ","))
  wait_for("hit opened", 5000, function()
    return ends_with(vim.api.nvim_buf_get_name(0), "/ops/backup.md")
  end)
  local ns = vim.api.nvim_create_namespace("situate_matches")
  local marks = vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })
  local places = {}
  for _, m in ipairs(marks) do
    table.insert(places, string.format("%d:%d-%d", m[2], m[3], m[4].end_col))
  end
  check("the matched words are highlighted in the opened hit", table.concat(places, " ") == "12:0-5 12:6-10",
    table.concat(places, " "))
end

local function test_prompt_and_completion()
  local prompted
  vim.ui.input = function(opts, on_confirm)
    prompted = opts.prompt
    on_confirm("how long are snapshots kept")
  end
  local before = #selections
  vim.cmd("Situate search")
  wait_for("search from the prompt", 10000, function()
    return #selections == before + 1
  end)
  check("search without a query prompts", prompted == "situate search: ", tostring(prompted))
  local first = selections[#selections].items[1]
  check("prompted query finds Retention", first.path == "ops/backup.md" and first.heading_path[2] == "Retention",
    first.path .. " " .. table.concat(first.heading_path, " › "))
  local names = table.concat(vim.fn.getcompletion("Situate ", "cmdline"), " ")
  check("subcommands complete", names == "reindex related search status", names)
end

local function test_quickfix()
  vim.fn.setqflist({}, "r")
  vim.cmd("Situate search! backup retention")
  wait_for("quickfix filled", 10000, function()
    return #vim.fn.getqflist() > 0
  end)
  local first = vim.fn.getqflist()[1]
  -- No line holds the words: the entry is at the line closest in meaning, in the chunk.
  check("quickfix first entry", ends_with(vim.api.nvim_buf_get_name(first.bufnr), "/ops/backup.md") and first.lnum == 12,
    vim.api.nvim_buf_get_name(first.bufnr) .. ":" .. first.lnum)
  -- The window shows "file|line col n| text" on one line, unwrapped.
  local shown = string.format("%s|%d col %d| %s", vim.fn.fnamemodify(vim.api.nvim_buf_get_name(first.bufnr), ":~:."),
    first.lnum, first.col, first.text)
  check("quickfix entries fit the screen", vim.fn.strdisplaywidth(shown) < vim.o.columns
    and first.text:find("Retention — ", 1, true) ~= nil, shown)
  vim.cmd("cclose")
end

local function test_hover()
  vim.cmd("edit " .. vim.fn.fnameescape(workspace .. "/ops/backup.md"))
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(0) },
    position = { line = 11, character = 0 },
  }
  local responses = vim.lsp.buf_request_sync(0, "textDocument/hover", params, 5000)
  local value
  for _, response in pairs(responses or {}) do
    if response.result and response.result.contents then
      value = response.result.contents.value or response.result.contents
    end
  end
  check("hover answered", type(value) == "string", vim.inspect(responses))
  check("hover shows the heading path", value:find("Backups › Retention", 1, true) ~= nil, value)
  check("hover shows the context", value:find("Document: Backup policy > Backups > Retention", 1, true) ~= nil, value)
end

local function test_related()
  vim.api.nvim_win_set_cursor(0, { 12, 0 })
  local before = #selections
  vim.cmd("Situate related")
  wait_for("related results", 10000, function()
    return #selections == before + 1
  end)
  local items = selections[#selections].items
  check("related has hits", #items > 0)
  for _, hit in ipairs(items) do
    if hit.path == "ops/backup.md" and hit.range.start.line == 9 then
      check("related leaves out the chunk itself", false, "got " .. hit.path .. ":" .. hit.range.start.line)
    end
  end
  record("ok related leaves out the chunk itself")
end

local function test_status_and_health()
  vim.cmd("Situate status")
  wait_for("status shown", 5000, function()
    return last_message("situate: status") ~= nil
  end)
  local shown = last_message("situate: status").message
  check("status shows the phase", shown:find(": ready", 1, true) ~= nil, shown)
  check("status shows files and chunks", shown:find("4 files, %d+ chunks") ~= nil, shown)

  vim.cmd("Situate reindex")
  wait_for("reindex answered", 10000, function()
    return last_message("situate: reindexed") ~= nil
  end)
  check("reindex reports its folder", last_message("situate: reindexed").message:find("4 files seen", 1, true) ~= nil,
    last_message("situate: reindexed").message)

  -- :silent keeps its progress messages out of the output, which must stay empty.
  vim.cmd("silent checkhealth situate")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  for line in report:gmatch("[^\n]+") do
    record("# health: " .. line)
  end
  check("health finds the binary", report:find("server binary: " .. vim.fn.exepath(server), 1, true) ~= nil, report)
  check("health shows the version", report:find("situate %d+%.%d+") ~= nil, report)
  check("health sees the client", report:find("running for", 1, true) ~= nil, report)
  check("health shows the index", report:find(": ready", 1, true) ~= nil and report:find("4 files", 1, true) ~= nil, report)
  check("health has no errors", report:find("ERROR", 1, true) == nil, report)
end

-- format_hit on made-up hits: never wider than it may be, the score and last heading kept.
local function test_format_hit()
  local format = require("situate.commands").format_hit
  local function hit(title, headings, preview)
    return { title = title, heading_path = headings, preview = preview, score = 0.25, path = "a.md" }
  end
  local chinese = format(hit("ch03-01.md", { "变量和可变性" }, string.rep("变量默认是不可变的。", 30)), 60)
  check("a Chinese preview is cut to the columns",
    vim.fn.strdisplaywidth(chinese) <= 60 and chinese:find("^ch03%-01%.md › 变量和可变性 — 变量默认.*… %(0%.250%)$") ~= nil,
    vim.fn.strdisplaywidth(chinese) .. ": " .. chinese)
  local deep = format(hit("Traefik & Kubernetes with Gateway API",
    { "Routing Configuration", "HTTPRoute", "Rule Matching and Filters", "Request Header Modifier" },
    "The request header modifier filter adds, sets or removes headers of the request."), 74)
  check("a long heading path keeps its last heading",
    vim.fn.strdisplaywidth(deep) <= 74 and deep:find("^… › Request Header Modifier — The request header .*… %(0%.250%)$") ~= nil,
    deep)
  local empty = format(hit("Backup policy", { "Backups", "Retention" }, ""), 74)
  check("a hit without a preview shows its place and score", empty == "Backup policy › Backups › Retention (0.250)", empty)
end

-- describe_folder on made-up answers: the languages line, only once another than English has chunks.
local function test_describe_languages()
  local describe = require("situate.commands").describe_folder
  local function folder(languages)
    local index = { files = 4, chunks = 8, index_dir = "/i", embedder = { model = "m" }, config_problems = {}, languages = languages }
    return table.concat(describe({ root = "/n", phase = "ready", indexing = vim.NIL, pending = {}, errors = {}, index = index }), "\n")
  end
  local english = folder({ { code = "en", name = "english", chunks = 8 } })
  check("no languages line for English alone", not english:find("languages:", 1, true), english)
  local mixed = folder({ { code = "en", name = "english", chunks = 5 }, { code = "de", name = "german", chunks = 3 } })
  check("the languages line names each", mixed:find("\n  languages: English 5 · German 3 (chunks by the rules of each)", 1, true) ~= nil, mixed)
end

-- describe_folder on made-up answers: the snippets lines in each state, and none when off.
local function test_describe_snippets()
  local describe = require("situate.commands").describe_folder
  local totals = {
    calls = 1250, failed = 3, rejected = 1, input_tokens = 812345, output_tokens = 40120,
    cache_read_tokens = 0, cache_write_tokens = 0,
  }
  local function folder(queue, off)
    local index = { files = 4, chunks = 8, index_dir = "/i", embedder = { model = "m" }, config_problems = {} }
    if not off then
      index.snippets = {
        model = "openai/gpt-4.1-mini@api.openai.com", mode = "section", done = 1200, pending = 939,
        max_calls = 5000, max_run_tokens = vim.NIL,
      }
    end
    return { root = "/n", phase = "ready", indexing = vim.NIL, pending = {}, errors = {}, snippets = queue, index = index }
  end
  local running = table.concat(describe(folder({ state = "running", done = 40, total = 939, totals = totals })), "\n")
  check("snippets line while running", running:find(
    "\n  snippets: running 40/939 · 1200 written, 939 pending · 1250 calls (3 failed), 812345 input + 40120 output tokens · openai/gpt-4.1-mini@api.openai.com (section)",
    1, true) ~= nil, running)
  local reason = "the snippet budget is spent (5000 calls, 852465 tokens this period)"
  local paused = table.concat(describe(folder({ state = "paused", reason = reason, done = 0, total = 0, totals = totals })), "\n")
  check("snippets paused with the reason", paused:find("\n  snippets paused: " .. reason
    .. " (:Situate reindex starts a new budget period)", 1, true) ~= nil, paused)
  local stopped = table.concat(describe(folder({
    state = "stopped", reason = "snippets stopped: the model keeps failing (HTTP 503)", retry_at = 1795232460,
    done = 0, total = 0, totals = totals,
  })), "\n")
  check("snippets stopped with the reason and the next try",
    stopped:find("\n  snippets stopped: the model keeps failing %(HTTP 503%) %(next try at %d%d:%d%d:%d%d, or now with :Situate reindex%)") ~= nil, stopped)
  local off = table.concat(describe(folder({ state = "idle", done = 2, total = 2, totals = totals }, true)), "\n")
  check("no snippets line when they are off", off:find("snippets", 1, true) == nil, off)
  check("no vectors line when none are pending", off:find("vectors:", 1, true) == nil, off)

  local filling = folder({ state = "idle", done = 0, total = 0, totals = totals }, true)
  filling.index.chunks = 5285
  filling.index.vectors_pending = 4045
  filling.index.vectors_eta_secs = 505
  filling.index.embedder = { provider = "e5", model = "multilingual-e5-small-q4" }
  local text = table.concat(describe(filling), "\n")
  check("a slow model's vectors being filled, with the time left", text:find(
    "\n  e5 vectors: 1240 of 5285, about 9 min left; the built-in static model stands in for the rest", 1, true) ~= nil, text)
end

-- An OpenAI-compatible /v1/chat/completions on 127.0.0.1 that writes one sentence per
-- chunk; returns its base URL and the requests it received.
local function start_chat_server()
  local uv = vim.loop
  local requests = {}
  local server = uv.new_tcp()
  server:bind("127.0.0.1", 0)
  server:listen(16, function(err)
    assert(not err, err)
    local socket = uv.new_tcp()
    server:accept(socket)
    local buffer = ""
    socket:read_start(function(read_err, data)
      if read_err or not data then
        socket:close()
        return
      end
      buffer = buffer .. data
      while true do
        local head_end = buffer:find("\r\n\r\n", 1, true)
        if not head_end then
          return
        end
        local head = buffer:sub(1, head_end - 1)
        local length = tonumber(head:lower():match("content%-length:%s*(%d+)")) or 0
        if #buffer < head_end + 3 + length then
          return
        end
        table.insert(requests, { head = head, body = buffer:sub(head_end + 4, head_end + 3 + length) })
        buffer = buffer:sub(head_end + 4 + length)
        local body = '{"choices":[{"index":0,"message":{"role":"assistant","content":'
          .. '"This part of the notes describes a routine task."},"finish_reason":"stop"}],'
          .. '"usage":{"prompt_tokens":120,"completion_tokens":12}}'
        socket:write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " .. #body
          .. "\r\n\r\n" .. body)
      end
    end)
  end)
  return string.format("http://127.0.0.1:%d/v1", server:getsockname().port), requests, server
end

-- A client started with `settings` sends them as initializationOptions: snippets from a
-- local chat server, then shown by :Situate status.
local function test_snippets(chunks)
  local compat = require("situate.compat")
  for _, client in ipairs(compat.clients()) do
    compat.stop(client)
  end
  wait_for("the first client to stop", 5000, function()
    return #compat.clients() == 0
  end)
  local url, requests, chat = start_chat_server()
  require("situate").setup({
    cmd = { server, "lsp" },
    settings = { snippets = { provider = "openai", model = "small-chat", base_url = url } },
  })
  vim.cmd("edit " .. vim.fn.fnameescape(workspace .. "/ops/backup.md"))
  wait_for("client with snippets attached", 10000, function()
    return situate_client() ~= nil and situate_client().initialized == true
  end)
  local client = situate_client()
  local folder
  wait_for("every chunk to get its snippet", 30000, function()
    local answer = status(client)
    folder = answer and answer.folders and answer.folders[1]
    -- Neovim's client decodes JSON null as nil or vim.NIL, depending on its version.
    local index = folder and folder.index ~= vim.NIL and folder.index or nil
    return index ~= nil and type(index.snippets) == "table" and index.snippets.pending == 0
      and type(folder.snippets) == "table" and folder.snippets.state == "idle"
  end)
  check("every chunk has a snippet", folder.index.snippets.done == chunks and #requests == chunks,
    string.format("%d written, %d requests, %d chunks", folder.index.snippets.done, #requests, chunks))
  check("no key is sent to a local server", requests[1].head:lower():find("authorization", 1, true) == nil,
    requests[1].head)

  local params = { textDocument = { uri = vim.uri_from_bufnr(0) }, position = { line = 11, character = 0 } }
  local hover = ""
  for _, response in pairs(vim.lsp.buf_request_sync(0, "textDocument/hover", params, 5000) or {}) do
    if response.result and response.result.contents then
      hover = response.result.contents.value or response.result.contents
    end
  end
  check("hover shows the snippet", hover:find("This part of the notes describes a routine task.", 1, true) ~= nil
    and hover:find("Snippet by openai/small-chat@127.0.0.1:", 1, true) ~= nil, hover)

  vim.cmd("Situate status")
  wait_for("status with snippets shown", 5000, function()
    local shown = last_message("situate: status")
    return shown ~= nil and shown.message:find("snippets:", 1, true) ~= nil
  end)
  local shown = last_message("situate: status").message
  record("# " .. shown:gsub("\n", "\n# "))
  local expected = string.format("\n  snippets: idle · %d written, 0 pending · %d calls, %d input + %d output tokens · "
    .. "openai/small-chat@127.0.0.1:", chunks, chunks, 120 * chunks, 12 * chunks)
  local at = shown:find(expected, 1, true)
  check("status shows the snippets line", at ~= nil and shown:find("^%d+ %(section%)", at + #expected) ~= nil, shown)
  for _, c in ipairs(compat.clients()) do
    compat.stop(c)
  end
  wait_for("the snippets client to stop", 5000, function()
    return #compat.clients() == 0
  end)
  chat:close()
end

-- situate.toml is no buffer of the client: its save reaches the server from the plugin,
-- which reopens the folder with the new settings.
local function test_settings_saved(client)
  local function files()
    local answer = status(client)
    local folder = answer and answer.folders and answer.folders[1]
    return folder and folder.phase == "ready" and folder.index ~= vim.NIL and folder.index.files or nil
  end
  vim.cmd("edit " .. vim.fn.fnameescape(workspace .. "/situate.toml"))
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'exclude = ["kitchen/**"]' })
  -- Polled by hand: a status request inside vim.wait's condition can keep it past its
  -- timeout on Neovim 0.7.
  local function poll(count)
    local seen
    for _ = 1, 100 do
      seen = files()
      if seen == count then
        break
      end
      vim.wait(100)
    end
    return seen
  end
  vim.cmd("silent write")
  local seen = poll(3)
  check("a saved situate.toml reopens the folder with its settings", seen == 3, tostring(seen) .. " files")
  vim.api.nvim_buf_set_lines(0, 0, -1, false, {})
  vim.cmd("silent write")
  seen = poll(4)
  check("the folder back to its four files", seen == 4, tostring(seen) .. " files")
  vim.cmd("bwipeout")
end

-- A folder of its own, with one note; returns the note's path.
local function other_root(name)
  local dir = vim.fn.tempname() .. "-" .. name
  vim.fn.mkdir(dir, "p")
  vim.fn.writefile({}, dir .. "/situate.toml")
  vim.fn.writefile({ "# Penguins", "", "Emperor penguins breed in the Antarctic winter." }, dir .. "/note.md")
  return dir .. "/note.md"
end

local function stop_all(what)
  local compat = require("situate.compat")
  for _, c in ipairs(compat.clients()) do
    compat.stop(c)
  end
  wait_for(what, 5000, function()
    return #compat.clients() == 0
  end)
end

-- With servers for two roots, :Situate status shows both in one message: a message
-- each would leave only the last on the screen.
local function test_status_of_two_roots()
  require("situate").setup({ cmd = { server, "lsp" } })
  vim.cmd("edit " .. vim.fn.fnameescape(workspace .. "/ops/backup.md"))
  local note = other_root("notes")
  vim.cmd("edit " .. vim.fn.fnameescape(note))
  wait_for("two clients", 10000, function()
    local clients = require("situate.compat").clients()
    return #clients == 2 and clients[1].initialized and clients[2].initialized
  end)
  local before = #messages
  vim.cmd("Situate status")
  wait_for("status of two roots shown", 5000, function()
    return last_message("situate: status") ~= nil and #messages > before
  end)
  vim.wait(300)
  local shown = {}
  for i = before + 1, #messages do
    table.insert(shown, messages[i].message)
  end
  local text = table.concat(shown, "\n---\n")
  check("status of two roots is one message", #shown == 1 and text:find(realpath(workspace) .. ": ", 1, true) ~= nil
    and text:find(vim.fn.fnamemodify(note, ":h") .. ": ", 1, true) ~= nil, text)
  stop_all("the clients of two roots to stop")
end

-- A server that exits at once, or cannot be started: the commands and the health check
-- say so and why, not that no file was opened.
local function test_failed_server()
  require("situate").setup({ cmd = { server, "no-such-subcommand" } })
  vim.cmd("edit " .. vim.fn.fnameescape(other_root("exits")))
  wait_for("the server to exit", 10000, function()
    return next(require("situate").failures) ~= nil
  end)
  vim.cmd("Situate search penguins")
  local shown = last_message("situate: ")
  check("a search says the server exited, with its code", shown ~= nil
    and shown.message:find("is not running: `" .. server .. " no-such-subcommand` exited with code 2", 1, true) ~= nil
    and shown.message:find(vim.lsp.get_log_path(), 1, true) ~= nil, shown and shown.message)

  require("situate").failures = {}
  require("situate").setup({ cmd = { "/nonexistent/situate", "lsp" } })
  vim.cmd("edit " .. vim.fn.fnameescape(other_root("missing")))
  vim.cmd("Situate status")
  shown = last_message("situate: ")
  check("status says the server could not be started", shown ~= nil
    and shown.message:find("/nonexistent/situate is not found or not executable", 1, true) ~= nil, shown and shown.message)
  vim.cmd("silent checkhealth situate")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  check("health says why the server is not running",
    report:find("ERROR: the server for .* is not running: `/nonexistent/situate lsp` could not be started") ~= nil, report)
end

local function main()
  vim.cmd("filetype on")
  vim.o.swapfile = false
  vim.o.shortmess = vim.o.shortmess .. "F"

  test_help()
  require("situate").setup({ cmd = { server, "lsp" } })
  test_attach()
  test_search()
  test_prompt_and_completion()
  test_matched_words()
  test_quickfix()
  test_hover()
  test_related()
  local chunks = status(situate_client()).folders[1].index.chunks
  test_status_and_health()
  test_settings_saved(require("situate.compat").clients()[1])
  test_describe_languages()
  test_describe_snippets()
  test_format_hit()
  test_snippets(chunks)

  -- Deprecation notices of newer Neovim versions come as warnings too.
  for _, shown in ipairs(messages) do
    if (shown.level or 0) >= vim.log.levels.WARN then
      check("no warnings or errors shown", false, shown.message)
    end
  end
  check("no warnings or errors shown", true)

  local ok, err = pcall(vim.cmd, "Situate")
  local usage = last_message("situate: usage:")
  check(":Situate alone shows the usage", ok and usage ~= nil and usage.level == vim.log.levels.INFO, tostring(err))

  test_status_of_two_roots()
  test_failed_server()
end

-- A hang must fail the run, not block it; run.sh also kills nvim after a while.
vim.defer_fn(function()
  record("not ok timeout: the test did not finish within 120 s")
  finish(1)
end, 120000)

local ok, failure = xpcall(main, function(err)
  if type(err) == "table" then
    return err
  end
  return { check = "error", detail = debug.traceback(tostring(err), 2) }
end)
if ok then
  record("passed")
  finish(0)
else
  record(string.format("not ok %s: %s", failure.check, failure.detail))
  for _, shown in ipairs(messages) do
    record("# message: " .. shown.message)
  end
  finish(1)
end
