-- Calls into Neovim's LSP client whose shape changed between 0.7 and later releases.

local M = {}

-- Neovim 0.11 turned client functions into methods (client:request) and deprecated the
-- dot-call form.
local methods = vim.fn.has("nvim-0.11") == 1

--- client.request(method, params, handler, bufnr) on every version.
function M.request(client, method, params, handler, bufnr)
  if methods then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

--- client.request_sync(method, params, timeout_ms, bufnr) on every version.
function M.request_sync(client, method, params, timeout_ms, bufnr)
  if methods then
    return client:request_sync(method, params, timeout_ms, bufnr)
  end
  return client.request_sync(method, params, timeout_ms, bufnr)
end

--- client.notify(method, params) on every version.
function M.notify(client, method, params)
  if methods then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

function M.is_stopped(client)
  if methods then
    return client:is_stopped()
  end
  return client.is_stopped()
end

function M.stop(client)
  if methods then
    return client:stop()
  end
  return client.stop()
end

--- Every running situate client.
function M.clients()
  local all = vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()
  local found = {}
  for _, client in ipairs(all) do
    if client.name == "situate" and not M.is_stopped(client) then
      table.insert(found, client)
    end
  end
  return found
end

--- The situate client attached to the buffer, if any.
function M.buffer_client(bufnr)
  for _, client in ipairs(M.clients()) do
    if vim.lsp.buf_is_attached(bufnr, client.id) then
      return client
    end
  end
  return nil
end

--- The byte index in `text` of an LSP `character` counted in `encoding` units.
function M.byte_index(text, character, encoding)
  if encoding == "utf-8" or character == 0 then
    return character
  end
  local ok, index
  if vim.fn.has("nvim-0.11") == 1 then
    ok, index = pcall(vim.str_byteindex, text, encoding, character, false)
  elseif encoding == "utf-16" then
    ok, index = pcall(vim.str_byteindex, text, character, true)
  else
    ok, index = pcall(vim.str_byteindex, text, character)
  end
  return ok and index or character
end

--- Opens the location {uri, range} in the current window and puts the cursor at its start.
function M.jump(location, encoding)
  if vim.lsp.util.show_document then
    return vim.lsp.util.show_document(location, encoding, { focus = true })
  end
  return vim.lsp.util.jump_to_location(location, encoding)
end

return M
