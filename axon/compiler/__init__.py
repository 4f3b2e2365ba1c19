"""The compiler front end: text -> (grammar, parser) -> AST -> (checker) -> IR."""
