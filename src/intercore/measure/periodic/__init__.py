"""Periodic jobs and the interference matrix: task sets read from YAML, run on the native
runner ic-periodic, every job stored, every task alone and every pair together.

Takes a task set (taskset.py); makes jobs (runner.py, kept by store.py) and the matrix
(matrix_runner.py measures it, matrix.py is its artefact, read by mitigate's Algorithm 1)."""
