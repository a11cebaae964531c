"""Stage 3, Learn: per-region slowdown predicted from a program's instruction trace.

Takes a binary with region markers (binary.py, tracer.py under Valgrind, extract.py); makes
region features, a trained model on disk (saved.py) and the code heatmap (heatmap.py) that the
compiler and the plan read. The dataset side: programs.py and families.py draw generated
programs, generate.py builds, traces and labels them with the measure stage's harness (labels.py),
dataset.py keeps them; learners.py holds every model behind one interface, evaluate.py and
metrics.py score them on held-out families, calibrate.py makes the safe bound. Start at
extract.py, then learners.py."""
