"""Stage 2, Measure: interference as it happens on this host, with evidence.

Takes victims (the built-in workloads or the user's own program, program.py), aggressors and
task sets; makes paired slowdowns (n, median, max, CI, the host regime), periodic jobs, the
interference matrix and bandwidth profiles, all saved in the store. Four stories:

- harness/     the paired, interleaved harness (start at harness/session.py)
- regime/      is cross-core interference observable right now (the canary, core sharing)
- aggressors/  which aggressors exist, and the worst-aggressor search
- periodic/    periodic jobs on ic-periodic and the interference matrix (start at taskset.py)
- bandwidth/   memory-traffic sources and the profiler of paper 004

model_validation.py checks a platform model's verdicts on this host (`model validate`)."""
