-- :Situate and its subcommands: search, related, reindex and status over workspace/executeCommand.

local compat = require("situate.compat")

local M = {}

local function notify(message, level)
  vim.notify("situate: " .. message, level or vim.log.levels.INFO)
end

-- Says why no server is there: the reasons it failed, else that none was started.
local function no_server(fallback)
  local lines = require("situate").failure_lines()
  if #lines == 0 then
    notify(fallback, vim.log.levels.WARN)
    return
  end
  table.insert(lines, "its messages are in " .. vim.lsp.get_log_path() .. "; see also :checkhealth situate")
  notify(table.concat(lines, "\n"), vim.log.levels.ERROR)
end

local NO_SERVER = "no server is running; open a markdown or text file of the workspace first"

-- The client of the current buffer, else any running one: a search from a buffer of
-- another filetype still goes to the workspace's server.
local function pick_client()
  local client = compat.buffer_client(vim.api.nvim_get_current_buf()) or compat.clients()[1]
  if not client then
    no_server(NO_SERVER)
  end
  return client
end

-- Every command takes a single object argument.
local function execute(client, command, argument, on_result)
  local params = { command = command, arguments = { argument } }
  compat.request(client, "workspace/executeCommand", params, function(err, result)
    if err then
      notify(command .. ": " .. (err.message or tostring(err)), vim.log.levels.ERROR)
      return
    end
    on_result(result)
  end, vim.api.nvim_get_current_buf())
end

--- `text` cut to at most `columns` screen columns (a Chinese, Japanese or Korean letter
--- takes two), with "…" at its end when it was cut.
function M.fit(text, columns)
  if vim.fn.strdisplaywidth(text) <= columns then
    return text
  end
  local room = columns - vim.fn.strdisplaywidth("…")
  local kept, used = {}, 0
  for char in text:gmatch("[%z\1-\127\194-\244][\128-\191]*") do
    local w = vim.fn.strdisplaywidth(char)
    if used + w > room then
      break
    end
    table.insert(kept, char)
    used = used + w
  end
  return vim.trim(table.concat(kept)) .. "…"
end

-- The columns an item of vim.ui.select may take: Neovim's own list puts "10: " before it.
local function item_columns()
  return vim.o.columns - 6
end

-- "title › heading › heading" in at most `columns` screen columns: the middle headings give
-- way first ("title › … › heading"), then the title is cut, or left out when little of it
-- would be left ("… › heading"), then the last heading.
local function shortened(parts, columns)
  local place = table.concat(parts, " › ")
  local joint = " › "
  while vim.fn.strdisplaywidth(place) > columns and #parts > 2 do
    table.remove(parts, 2)
    joint = " › … › "
    place = parts[1] .. joint .. table.concat(parts, " › ", 2)
  end
  if vim.fn.strdisplaywidth(place) <= columns or #parts < 2 then
    return M.fit(place, columns)
  end
  local tail = joint .. parts[#parts]
  local title_columns = columns - vim.fn.strdisplaywidth(tail)
  if title_columns < 8 then
    return M.fit("… › " .. parts[#parts], columns)
  end
  return M.fit(parts[1], title_columns) .. tail
end

--- One line per hit: "title › heading path — preview (score)", at most `columns` screen
--- columns wide (by default, as wide as the screen's list of choices), so that it never
--- wraps: a long heading path loses its middle headings, and the preview is cut. A hit whose
--- preview is empty (its lines were shown under a better hit) reads "title › heading path
--- (score)".
function M.format_hit(hit, columns)
  columns = columns or item_columns()
  local parts = {}
  local title = (hit.title and hit.title ~= "") and hit.title or hit.path
  table.insert(parts, title)
  for _, heading in ipairs(hit.heading_path or {}) do
    -- A document's title is often its first heading as well.
    if not (#parts == 1 and heading == title) then
      table.insert(parts, heading)
    end
  end
  local score = string.format(" (%.3f)", hit.score or 0)
  local preview = vim.trim(((hit.preview or ""):gsub("%s+", " ")))
  local room = columns - vim.fn.strdisplaywidth(score)
  -- The place leaves the preview at least half the line.
  local place_room = room
  if preview ~= "" then
    place_room = math.max(math.floor(room / 2), room - vim.fn.strdisplaywidth(" — " .. preview))
  end
  local place = shortened(parts, place_room)
  if preview == "" then
    return place .. score
  end
  preview = M.fit(preview, room - vim.fn.strdisplaywidth(place .. " — "))
  return place .. " — " .. preview .. score
end

-- Where the words that matched the query are highlighted in an opened hit.
local matches = vim.api.nvim_create_namespace("situate_matches")

--- The distinct words the server marked in a hit's preview (its offsets are in the
--- client's position encoding).
function M.matched_terms(hit, encoding)
  local preview = hit.preview or ""
  local terms, seen = {}, {}
  for _, mark in ipairs(hit.preview_marks or {}) do
    local first = compat.byte_index(preview, mark[1], encoding)
    local last = compat.byte_index(preview, mark[2], encoding)
    local term = preview:sub(first + 1, last)
    if term:find("%S") and not seen[term] then
      seen[term] = true
      table.insert(terms, term)
    end
  end
  return terms
end

--- Highlights the words that matched in the hit's lines of buffer `bufnr`, clearing those
--- of the hit opened before. Returns how many places were highlighted.
function M.highlight_matches(bufnr, hit, encoding)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      vim.api.nvim_buf_clear_namespace(buf, matches, 0, -1)
    end
  end
  local terms = M.matched_terms(hit, encoding)
  local first = hit.range.start.line
  local lines = vim.api.nvim_buf_get_lines(bufnr, first, hit.range["end"].line + 1, false)
  local count = 0
  for i, text in ipairs(lines) do
    for _, term in ipairs(terms) do
      local from = 1
      while true do
        local s, e = text:find(term, from, true)
        if not s then
          break
        end
        vim.api.nvim_buf_add_highlight(bufnr, matches, "Search", first + i - 1, s - 1, e)
        count = count + 1
        from = e + 1
      end
    end
  end
  return count
end

local function open_hit(client, hit)
  compat.jump({ uri = hit.uri, range = hit.range }, client.offset_encoding)
  M.highlight_matches(vim.api.nvim_get_current_buf(), hit, client.offset_encoding)
end

-- A quickfix entry at the line that matched (the preview's first line).
local function quickfix_item(client, hit)
  local filename = vim.uri_to_fname(hit.uri)
  local lnum = (hit.preview_line or hit.range.start.line) + 1
  local col = 0
  local terms = M.matched_terms(hit, client.offset_encoding)
  if #terms > 0 then
    local line = vim.fn.readfile(filename, "", lnum)[lnum] or ""
    col = (line:find(terms[1], 1, true) or 1) - 1
  end
  -- The quickfix window shows "file|line col n| " before the text.
  local shown = string.format("%s|%d col %d| ", vim.fn.fnamemodify(filename, ":~:."), lnum, col + 1)
  local columns = vim.o.columns - vim.fn.strdisplaywidth(shown) - 1
  return { filename = filename, lnum = lnum, col = col + 1, text = M.format_hit(hit, columns) }
end

-- Shows an answer of situate.search or situate.similar.
local function show_hits(client, answer, title, to_quickfix)
  if answer.indexing then
    notify("index still building; results come from its last commit", vim.log.levels.WARN)
  end
  local hits = answer.hits or {}
  if #hits == 0 then
    notify("no results for " .. title)
    return
  end
  if to_quickfix then
    local items = {}
    for _, hit in ipairs(hits) do
      table.insert(items, quickfix_item(client, hit))
    end
    vim.fn.setqflist({}, " ", { title = "situate: " .. title, items = items })
    vim.cmd("copen")
    return
  end
  local prompt = "situate: " .. title
  if answer.indexing then
    prompt = prompt .. " (index still building)"
  end
  vim.ui.select(hits, { prompt = prompt, format_item = M.format_hit, kind = "situate" }, function(hit)
    if hit then
      open_hit(client, hit)
    end
  end)
end

--- Runs situate.search and shows the hits; prompts for the query when it is empty.
function M.search(query, to_quickfix)
  local client = pick_client()
  if not client then
    return
  end
  local function run(text)
    if not text or vim.trim(text) == "" then
      return
    end
    text = vim.trim(text)
    execute(client, "situate.search", { query = text }, function(answer)
      show_hits(client, answer, '"' .. text .. '"', to_quickfix)
    end)
  end
  if query and vim.trim(query) ~= "" then
    run(query)
  else
    vim.ui.input({ prompt = "situate search: " }, run)
  end
end

--- Runs situate.similar on the chunk under the cursor.
function M.related(to_quickfix)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = compat.buffer_client(bufnr)
  if not client then
    no_server("this buffer is not a file of a situate workspace")
    return
  end
  -- The position is counted in the client's encoding (UTF-16 unless the server chose UTF-8).
  local position = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local argument = { uri = position.textDocument.uri, position = position.position }
  execute(client, "situate.similar", argument, function(answer)
    show_hits(client, answer, "related to line " .. (position.position.line + 1), to_quickfix)
  end)
end

--- Runs situate.reindex: the file `path` when given, else every folder.
function M.reindex(path)
  local client = pick_client()
  if not client then
    return
  end
  local argument = vim.empty_dict()
  if path and path ~= "" then
    argument = { uri = vim.uri_from_fname(vim.fn.fnamemodify(vim.fn.expand(path), ":p")) }
  end
  notify("reindexing…")
  execute(client, "situate.reindex", argument, function(answer)
    if answer.path then
      local report = answer.report or {}
      if (report.files_indexed or 0) > 0 then
        notify(string.format("%s reindexed, %d chunks written", answer.path, report.chunks_written or 0))
      else
        notify(answer.path .. " is unchanged")
      end
      return
    end
    local lines = {}
    for _, folder in ipairs(answer.folders or {}) do
      local report = folder.report or {}
      table.insert(lines, string.format("%s: %d files seen, %d indexed, %d removed, %d chunks written",
        folder.root, report.files_seen or 0, report.files_indexed or 0, report.files_removed or 0, report.chunks_written or 0))
    end
    notify("reindexed\n" .. table.concat(lines, "\n"))
  end)
end

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

--- Lines on the folder's LLM-written snippets, none when they are off: the queue's state,
--- chunks with a snippet and waiting for one, the calls and tokens of the budget period,
--- and why the queue is paused or stopped.
function M.describe_snippets(folder)
  local queue = present(folder.snippets) and folder.snippets or nil
  local index = present(folder.index) and folder.index or nil
  local stats = index and present(index.snippets) and index.snippets or nil
  -- The open index says whether snippets are on (a folder whose snippets were turned off
  -- may keep its queue's last state); before it is open, the queue does.
  if (index and not stats) or (not index and not queue) then
    return {}
  end
  local parts = {}
  local state = queue and queue.state or "idle"
  if queue and state == "running" and (queue.total or 0) > 0 then
    state = string.format("%s %d/%d", state, queue.done or 0, queue.total)
  end
  table.insert(parts, state)
  if stats then
    table.insert(parts, string.format("%d written, %d pending", stats.done or 0, stats.pending or 0))
  end
  if queue and present(queue.totals) then
    local t = queue.totals
    local calls = string.format("%d calls", t.calls or 0)
    if (t.failed or 0) > 0 then
      calls = string.format("%s (%d failed)", calls, t.failed)
    end
    table.insert(parts, string.format("%s, %d input + %d output tokens", calls, t.input_tokens or 0, t.output_tokens or 0))
  end
  if stats then
    table.insert(parts, string.format("%s (%s)", tostring(stats.model), tostring(stats.mode)))
  end
  local lines = { "  snippets: " .. table.concat(parts, " · ") }
  if queue and (queue.state == "paused" or queue.state == "stopped") then
    local reason = present(queue.reason) and tostring(queue.reason) or "no reason given"
    -- The server's reasons may start with what the state already says.
    reason = reason:gsub("^snippets %a+: ", "")
    local line = string.format("  snippets %s: %s", queue.state, reason)
    if queue.state == "paused" then
      line = line .. " (:Situate reindex starts a new budget period)"
    elseif present(queue.retry_at) then
      line = line .. " (next try at " .. os.date("%H:%M:%S", queue.retry_at) .. ", or now with :Situate reindex)"
    else
      line = line .. " (:Situate reindex tries again now)"
    end
    table.insert(lines, line)
  end
  return lines
end

--- "e5 vectors: 1240 of 5285, about 9 min left; ...": a slow model's vectors still being filled.
function M.pending_vectors(index)
  local done = math.max(0, (index.chunks or 0) - index.vectors_pending)
  local left = ""
  local eta = index.vectors_eta_secs
  if type(eta) == "number" then
    if eta < 60 then
      left = string.format(", about %d s left", eta)
    elseif eta < 3600 then
      left = string.format(", about %d min left", math.ceil(eta / 60))
    else
      left = string.format(", about %d h %d min left", math.floor(eta / 3600), math.floor((eta % 3600) / 60))
    end
  end
  local provider = index.embedder and index.embedder.provider or "model"
  return string.format(
    "%s vectors: %d of %d%s; the built-in static model stands in for the rest",
    provider,
    done,
    index.chunks or 0,
    left
  )
end

--- "languages: English 1240 · German 340 (chunks by the rules of each)", once a language
--- other than English has chunks; nil otherwise.
function M.describe_languages(languages)
  if type(languages) ~= "table" then
    return nil
  end
  local shares, other = {}, false
  for _, l in ipairs(languages) do
    other = other or l.code ~= "en"
    table.insert(shares, string.format("%s%s %d", l.name:sub(1, 1):upper(), l.name:sub(2), l.chunks))
  end
  if not other then
    return nil
  end
  return "languages: " .. table.concat(shares, " · ") .. " (chunks by the rules of each)"
end

--- Lines describing one folder of a situate.status answer; `with_errors` adds its errors.
function M.describe_folder(folder, with_errors)
  local phase = folder.phase
  if folder.indexing ~= nil and folder.indexing ~= vim.NIL then
    phase = string.format("%s %d/%d files", phase, folder.indexing.done, folder.indexing.total)
  end
  local lines = { string.format("%s: %s", folder.root, phase) }
  local index = folder.index
  if index ~= nil and index ~= vim.NIL then
    local model = index.embedder and index.embedder.model or "?"
    table.insert(lines, string.format("  %d files, %d chunks, model %s", index.files or 0, index.chunks or 0, model))
    table.insert(lines, "  index: " .. tostring(index.index_dir))
    local languages = M.describe_languages(index.languages)
    if languages then
      table.insert(lines, "  " .. languages)
    end
    if (index.vectors_pending or 0) > 0 then
      table.insert(lines, "  " .. M.pending_vectors(index))
    end
    for _, problem in ipairs(index.config_problems or {}) do
      table.insert(lines, "  config: " .. (type(problem) == "string" and problem or vim.inspect(problem)))
    end
  end
  vim.list_extend(lines, M.describe_snippets(folder))
  if folder.pending and #folder.pending > 0 then
    table.insert(lines, "  pending: " .. table.concat(folder.pending, ", "))
  end
  for _, problem in ipairs(with_errors and folder.errors or {}) do
    table.insert(lines, "  error: " .. (type(problem) == "string" and problem or vim.inspect(problem)))
  end
  return lines
end

--- Shows situate.status of every running client in one message, once all have answered:
--- a message each would leave only the last on the screen.
function M.status()
  local clients = compat.clients()
  if #clients == 0 then
    no_server(NO_SERVER)
    return
  end
  local answers, waiting, failed = {}, #clients, false
  for i, client in ipairs(clients) do
    local params = { command = "situate.status", arguments = { vim.empty_dict() } }
    compat.request(client, "workspace/executeCommand", params, function(err, answer)
      local lines = {}
      if err then
        failed = true
        table.insert(lines, string.format("%s: situate.status failed: %s", tostring(client.config.root_dir),
          err.message or tostring(err)))
      else
        for _, folder in ipairs(answer.folders or {}) do
          vim.list_extend(lines, M.describe_folder(folder, true))
        end
      end
      answers[i] = table.concat(lines, "\n")
      waiting = waiting - 1
      if waiting == 0 then
        notify("status\n" .. table.concat(answers, "\n"), failed and vim.log.levels.ERROR or nil)
      end
    end, vim.api.nvim_get_current_buf())
  end
end

local subcommands = {
  search = function(args, bang)
    M.search(table.concat(args, " "), bang or require("situate").config.quickfix)
  end,
  related = function(_, bang)
    M.related(bang or require("situate").config.quickfix)
  end,
  reindex = function(args)
    M.reindex(table.concat(args, " "))
  end,
  status = function()
    M.status()
  end,
}

local function run(opts)
  local args = vim.deepcopy(opts.fargs)
  local name = table.remove(args, 1) or ""
  -- ":Situate search! query" puts the bang on the subcommand; ":Situate! search" works too.
  local bang = opts.bang
  if name:sub(-1) == "!" then
    name, bang = name:sub(1, -2), true
  end
  local subcommand = subcommands[name]
  if not subcommand then
    -- A bare :Situate asks what there is; a wrong name is an error.
    notify("usage: :Situate search[!] [query] | related[!] | reindex [file] | status",
      name == "" and vim.log.levels.INFO or vim.log.levels.ERROR)
    return
  end
  subcommand(args, bang)
end

local function complete(arg_lead, line)
  -- Only the first word is a subcommand; reindex takes a file.
  local words = vim.split(line, "%s+")
  if #words > 2 then
    if words[2] == "reindex" then
      return vim.fn.getcompletion(arg_lead, "file")
    end
    return {}
  end
  local names = {}
  for name in pairs(subcommands) do
    if name:find(arg_lead, 1, true) == 1 then
      table.insert(names, name)
    end
  end
  table.sort(names)
  return names
end

function M.define()
  vim.api.nvim_create_user_command("Situate", run, {
    -- "*", not "+": a bare :Situate shows the usage rather than E471.
    nargs = "*",
    bang = true,
    complete = complete,
    desc = "situate: search, related, reindex, status",
  })
end

return M
