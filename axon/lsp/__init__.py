"""`axon lsp`, the language server: editor requests over stdio -> answers about AXON programs.

`chunks` (text -> AST and tokens, made again only for the items an edit touched),
`analysis` (text -> problems, declarations, uses, completions; no protocol),
`documents` (open documents, their versions and the editor's positions), `server`
(the Language Server Protocol through pygls, the `lsp` extra). docs/editors.md.
"""
