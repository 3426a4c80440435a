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
  for _, tag in ipairs({ "situate.txt", ":Situate", "situate-setup", "situate-health" }) do
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
  local line = selections[1].opts.format_item(first)
  record("# first item: " .. line)
  check("item shows title, heading path, preview and score",
    line:find("^Backup policy › Backups › Retention — Snapshots are kept for thirty days%..* %(%d%.%d%d%d%)$") ~= nil, line)
  wait_for("hit opened", 5000, function()
    return ends_with(vim.api.nvim_buf_get_name(0), "/ops/backup.md")
  end)
  local cursor = vim.api.nvim_win_get_cursor(0)
  check("hit opened ops/backup.md at line 10", cursor[1] == 10 and cursor[1] == first.range.start.line + 1,
    "cursor at line " .. cursor[1])
  check("line 10 is ## Retention", vim.api.nvim_get_current_line() == "## Retention", vim.api.nvim_get_current_line())
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
  check("quickfix first entry", ends_with(vim.api.nvim_buf_get_name(first.bufnr), "/ops/backup.md") and first.lnum == 10,
    vim.api.nvim_buf_get_name(first.bufnr) .. ":" .. first.lnum)
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

local function main()
  vim.cmd("filetype on")
  vim.o.swapfile = false
  vim.o.shortmess = vim.o.shortmess .. "F"

  test_help()
  require("situate").setup({ cmd = { server, "lsp" } })
  test_attach()
  test_search()
  test_prompt_and_completion()
  test_quickfix()
  test_hover()
  test_related()
  test_status_and_health()

  -- Deprecation notices of newer Neovim versions come as warnings too.
  for _, shown in ipairs(messages) do
    if (shown.level or 0) >= vim.log.levels.WARN then
      check("no warnings or errors shown", false, shown.message)
    end
  end
  check("no warnings or errors shown", true)
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
