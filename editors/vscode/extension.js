// Starts `nadc lsp` for `.nad` files; everything else (diagnostics, hover, completion, formatting,
// quick fixes, navigation) is the server's. See docs/editors.md.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("nadc").get("path") || "nadc";
  client = new LanguageClient(
    "nadc",
    "nadc lsp",
    { command, args: ["lsp"] },
    { documentSelector: [{ scheme: "file", language: "nad" }, { scheme: "untitled", language: "nad" }] }
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
