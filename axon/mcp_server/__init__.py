"""`axon mcp`: seed 002's `memory` tool over the Model Context Protocol (docs/agents.md).

The pipeline, one module each:

- `tool`: the tool itself, without the SDK: its input schema, the checks of a
  call's arguments, the actions over a memory's `AsyncMemoryHandle`, seed 002's
  result shapes, and every mistake as an `{"error": ...}` result;
- `target`: which memory is served (the default `AgentMemory`, or one declared in
  `--program FILE`) and the session that holds it;
- `server`: the MCP server on the official SDK (stdio, or streamable HTTP);
- `command`: the `axon mcp` command line (registered by `axon.cli`).

Importing this package imports neither the SDK nor the runtime; only `server`
imports `mcp`. Named `mcp_server`, not `mcp`, so it is never confused with the SDK.
"""
