"""Helpers the test modules share (a subprocess `axon`, REPL key input, the hostile
corpus...): test modules import them from here, never from one another."""
