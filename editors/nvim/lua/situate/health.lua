-- :checkhealth situate: the server binary, the running clients and the state of their indexes.

local compat = require("situate.compat")

local M = {}

-- Neovim 0.7 has require("health").report_*; 0.8 and 0.9 have vim.health.report_*; 0.10
-- renamed them vim.health.start, ok, ...
local function reporter()
  local health = vim.health or require("health")
  return {
    start = health.start or health.report_start,
    ok = health.ok or health.report_ok,
    info = health.info or health.report_info,
    warn = health.warn or health.report_warn,
    error = health.error or health.report_error,
  }
end

local function check_binary(report, cmd)
  local path = vim.fn.exepath(cmd[1])
  if path == "" then
    report.error(string.format("server binary not found: %s", cmd[1]), {
      "Install it with `cargo install --path .` in the situate repository",
      "or pass its full path: require('situate').setup({ cmd = { '/path/to/situate', 'lsp' } })",
    })
    return
  end
  local version = vim.fn.system({ path, "--version" })
  if vim.v.shell_error ~= 0 then
    report.error(string.format("%s --version failed: %s", path, vim.trim(version)))
    return
  end
  report.ok(string.format("server binary: %s (%s)", path, vim.trim(version)))
end

local function check_client(report, client)
  report.ok(string.format("client %d running for %s", client.id, tostring(client.config.root_dir)))
  local response, failure = compat.request_sync(client, "workspace/executeCommand", {
    command = "situate.status",
    arguments = { vim.empty_dict() },
  }, 5000)
  if not response then
    report.warn("situate.status did not answer: " .. tostring(failure or "no answer"))
    return
  end
  if response.err then
    report.error("situate.status failed: " .. tostring(response.err.message or response.err))
    return
  end
  local describe = require("situate.commands").describe_folder
  for _, folder in ipairs(response.result.folders or {}) do
    local text = table.concat(describe(folder, false), "\n")
    if folder.phase == "ready" then
      report.ok(text)
    elseif folder.phase == "failed" then
      report.error(text)
    elseif folder.phase == "read-only" then
      report.info(text .. "\n  another editor's server writes this index; this one reads it")
    else
      report.info(text)
    end
    for _, problem in ipairs(folder.errors or {}) do
      report.error(type(problem) == "string" and problem or vim.inspect(problem))
    end
  end
end

function M.check()
  local report = reporter()
  report.start("situate")

  if vim.fn.has("nvim-0.7") == 1 then
    report.ok("Neovim 0.7 or later")
  else
    report.error("Neovim 0.7 or later is needed")
  end

  local config = require("situate").config
  if not config then
    report.warn("require('situate').setup() has not been called")
  end
  check_binary(report, (config and config.cmd) or { "situate", "lsp" })

  local failures = require("situate").failure_lines()
  for _, line in ipairs(failures) do
    report.error(line, {
      "Its messages are in " .. vim.lsp.get_log_path(),
      "Run the command in a terminal to see what it says",
    })
  end

  local clients = compat.clients()
  if #clients == 0 then
    if #failures == 0 then
      report.warn("no situate client is running", { "Open a markdown or text file of the workspace" })
    end
    return
  end
  for _, client in ipairs(clients) do
    check_client(report, client)
  end
end

return M
