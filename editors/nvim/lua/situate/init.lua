-- situate for Neovim: starts the `situate lsp` client and attaches it to markdown and text buffers.

local compat = require("situate.compat")

local M = {}

local defaults = {
  -- The server command; the first element is looked up on $PATH.
  cmd = { "situate", "lsp" },
  -- Keys of situate.toml, sent as initializationOptions and laid over the folder's file.
  settings = {},
  -- Buffers of these filetypes get the client.
  filetypes = { "markdown", "mdx", "text" },
  -- Looked for upwards from the file, in this order: the first marker found anywhere above
  -- the file wins, so a situate.toml above a nested .git still marks the root.
  root_markers = { "situate.toml", ".git" },
  -- Send results of :Situate search and :Situate related to the quickfix list instead of
  -- vim.ui.select.
  quickfix = false,
}

--- The options in effect, or nil before setup().
M.config = nil

-- On Neovim 0.7, where vim.lsp.start is missing, one client per root directory.
local client_by_root = {}

--- Why the server of a root is not running, by root: it could not be started, or it
--- exited on its own. Cleared when a server for that root starts.
M.failures = {}

--- One line per root whose server is not running, and why, sorted by root.
function M.failure_lines()
  local roots = vim.tbl_keys(M.failures)
  table.sort(roots)
  local lines = {}
  for _, root in ipairs(roots) do
    table.insert(lines, string.format("the server for %s is not running: %s", root, M.failures[root]))
  end
  return lines
end

local function is_dir(path)
  local stat = vim.loop.fs_stat(path)
  return stat ~= nil and stat.type == "directory"
end

local function exists(path)
  return vim.loop.fs_stat(path) ~= nil
end

--- The workspace root of a file: the nearest directory above it holding the first of
--- `markers` found, trying the markers in order, else the file's own directory.
function M.root_dir(path, markers)
  markers = markers or (M.config or defaults).root_markers
  local start = vim.fn.fnamemodify(path, ":p")
  if not is_dir(start) then
    start = vim.fn.fnamemodify(start, ":h")
  end
  start = start:gsub("(.)/$", "%1")
  for _, marker in ipairs(markers) do
    local dir = start
    while true do
      if exists(dir .. "/" .. marker) then
        return dir
      end
      local parent = vim.fn.fnamemodify(dir, ":h")
      if parent == dir then
        break
      end
      dir = parent
    end
  end
  return start
end

-- Only real files on disk are indexed, so buffers of other kinds (help, terminals, URLs
-- such as fugitive:// or oil://) are left alone.
local function buffer_file(bufnr)
  if vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or name:match("^%a[%w+.-]*://") then
    return nil
  end
  return name
end

local function on_attach(_, bufnr)
  -- K shows the hover (the chunk's heading path and indexed context), unless the user
  -- already maps K globally or for this buffer.
  if vim.fn.maparg("K", "n") == "" then
    vim.keymap.set("n", "K", vim.lsp.buf.hover, { buffer = bufnr, desc = "situate: hover" })
  end
end

local function command_line(cmd)
  return table.concat(cmd, " ")
end

local function client_config(root)
  local config = M.config
  return {
    name = "situate",
    cmd = config.cmd,
    root_dir = root,
    -- An empty Lua table would be sent as [], which the server rejects.
    init_options = next(config.settings) and config.settings or vim.empty_dict(),
    on_attach = on_attach,
    on_init = function()
      M.failures[root] = nil
    end,
    -- Neovim only says "Client 1 quit with exit code 2"; keep the reason for :Situate and
    -- :checkhealth. A server asked to stop exits with 0.
    on_exit = function(code, signal)
      if code ~= 0 or signal ~= 0 then
        M.failures[root] = string.format("`%s` exited with code %d%s", command_line(config.cmd), code,
          signal ~= 0 and (" (signal " .. signal .. ")") or "")
      end
    end,
  }
end

local function start_failed(root)
  M.failures[root] = string.format("`%s` could not be started: %s is not found or not executable",
    command_line(M.config.cmd), M.config.cmd[1])
end

--- Starts or reuses the client for the buffer's workspace and attaches it.
function M.attach(bufnr)
  if not M.config then
    return
  end
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local file = buffer_file(bufnr)
  if not file then
    return
  end
  local root = M.root_dir(file)
  if vim.lsp.start then
    -- vim.lsp.start reuses the client of the same name and root. Neovim 0.8 attaches it to
    -- the current buffer whatever `bufnr` says, so make the buffer current.
    vim.api.nvim_buf_call(bufnr, function()
      -- A command that cannot be spawned gives nil, or an error on some versions.
      local ok, id = pcall(vim.lsp.start, client_config(root), { bufnr = bufnr })
      if not ok then
        vim.notify(tostring(id), vim.log.levels.WARN)
      end
      if not ok or not id then
        start_failed(root)
      end
    end)
    return
  end
  local id = client_by_root[root]
  local client = id and vim.lsp.get_client_by_id(id)
  if not client or compat.is_stopped(client) then
    id = vim.lsp.start_client(client_config(root))
    if not id then
      start_failed(root)
      return
    end
    client_by_root[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
end

--- Tells each server whose root holds the settings file of buffer `bufnr` that it changed.
function M.settings_saved(bufnr)
  local file = buffer_file(bufnr)
  if not file then
    return
  end
  file = vim.fn.fnamemodify(file, ":p")
  local uri = vim.uri_from_fname(file)
  for _, client in ipairs(compat.clients()) do
    local root = client.config.root_dir and vim.fn.fnamemodify(client.config.root_dir, ":p")
    if root and file:sub(1, #root) == root then
      compat.notify(client, "workspace/didChangeWatchedFiles", { changes = { { uri = uri, type = 2 } } })
    end
  end
end

--- Configures the plugin: attaches the client to matching buffers, now and from now on,
--- and defines :Situate. Calling it again replaces the options.
function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  -- Lists are replaced, not merged, so that a user's filetypes or markers stand alone.
  for _, key in ipairs({ "cmd", "filetypes", "root_markers" }) do
    if opts and opts[key] then
      M.config[key] = opts[key]
    end
  end

  local group = vim.api.nvim_create_augroup("situate", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = M.config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  -- A situate.toml is not a buffer of the client, so its save is no didSave. Neovim on
  -- Linux does not watch files for the server either, so tell the server of the save as a
  -- watcher would: it reopens the folder with the new settings.
  vim.api.nvim_create_autocmd("BufWritePost", {
    group = group,
    pattern = "situate.toml",
    callback = function(args)
      M.settings_saved(args.buf)
    end,
  })
  -- Buffers opened before setup (a lazy-loaded plugin) are attached too.
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(M.config.filetypes, vim.bo[bufnr].filetype) then
      M.attach(bufnr)
    end
  end

  require("situate.commands").define()
end

return M
