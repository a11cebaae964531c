"""Algorithm 1 of paper 000: from the interference matrix to a cgroup plan.

algorithm1.py decides the hierarchy; record.py is the plan as an artefact, and after `apply` the
record of what was created (the filesystem side is mitigate.cgroupfs)."""
