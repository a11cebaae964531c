"""Stage 4, Compile: a composition program into a fused, scheduled dataflow binary.

Takes a composition program (grammar.lark, docs/compile.md) and the user's C functions; makes C
with OpenMP or MLIR, and a binary. The driver is pipeline.py: parser.py → ast.py → irgen.py
(the comp IR, definite.py checks assignment) → dataflow.py → passes.py (fusion, cost.py and
weights.py decide) → partition.py (tasks and channels) → emit_c.py or emit_mlir.py → build.py.
explain.py and draw.py say what fusion decided; runs.py runs and measures a build."""
