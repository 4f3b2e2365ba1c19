// The AXON extension: starts `axon lsp` (the command in the setting axon.server.command)
// for .axon files and talks to it over stdio. Plain JavaScript, no build step:
// `npm install` here fetches vscode-languageclient; docs/editors.md says how to load it.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("axon").get("server.command") || "axon";
  const server = { command, args: ["lsp"], transport: TransportKind.stdio };
  client = new LanguageClient(
    "axon",
    "AXON language server",
    { run: server, debug: server },
    { documentSelector: [{ scheme: "file", language: "axon" }, { scheme: "untitled", language: "axon" }] }
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
