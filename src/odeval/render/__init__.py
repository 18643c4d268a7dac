"""odeval.render: the text renderers of the command line (one module per command family).

Each renderer takes the result object of one library function and returns the text (or rich renderable) the
``odeval`` command prints; nothing here computes. ``odeval.cli`` parses, calls one library function and renders
with a function of this package (docs/architecture.md, "Rendering"). Submodules are imported directly.
"""
