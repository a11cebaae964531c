"""The foundation every stage stands on: errors, the bounded YAML loader, artefacts, output
files and locks, the native tools' location and their processes, units, the stop discipline, and
the two record types that the measure stage produces and the store keeps (the sample, the job).

It imports nothing of intercore above it. Start with errors.py (the exit codes), then procs.py
(how a native tool is spawned, read and never left behind) and stopping.py (Ctrl-C and SIGTERM)."""
