-- Headless Neovim as a real LSP client: start gbls on a file, wait for its diagnostics and hover,
-- and write what Neovim received to a JSON file. Run: nvim --headless -u NONE -l diagnostics.lua
-- PYTHON FILE OUT
local python, file, out = arg[1], arg[2], arg[3]

vim.cmd.edit(file)
local buf = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start({
  name = "gbls",
  cmd = { python, "-m", "gbls" },
  root_dir = vim.fs.dirname(file),
  init_options = { gbls = { debounceMs = 200 } },
})

local received = vim.wait(120000, function()
  return #vim.diagnostic.get(buf) > 0
end, 100)

local result = { received = received, diagnostics = {}, hover = nil }
for _, d in ipairs(vim.diagnostic.get(buf)) do
  table.insert(result.diagnostics, {
    lnum = d.lnum,
    col = d.col,
    end_lnum = d.end_lnum,
    end_col = d.end_col,
    severity = d.severity,
    message = d.message,
    code = d.code,
    source = d.source,
  })
end

if received then
  local first = vim.diagnostic.get(buf)[1]
  local client = vim.lsp.get_client_by_id(client_id)
  local response = client:request_sync("textDocument/hover", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = first.lnum, character = first.col },
  }, 10000, buf)
  if response and response.result then
    result.hover = response.result.contents.value
  end
end

vim.fn.writefile({ vim.json.encode(result) }, out)
vim.lsp.stop_client(client_id)
vim.wait(5000, function()
  return vim.lsp.get_client_by_id(client_id) == nil
end, 100)
vim.cmd("qa!")
