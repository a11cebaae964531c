"""Stage 5, Mitigate: keep critical tasks within their budget on a stock Linux kernel.

Takes the interference matrix (measure.periodic.matrix) and a task set; makes a cgroup plan,
applies it (cgroupfs.py, the only code that writes the cgroup tree) and enforces it at run time.
Four stories:

- plan/        Algorithm 1 of paper 000 and the plan record (start at plan/algorithm1.py)
- freezer/     the freezer monitor, its independent watchdog, the service, the fault drills
- bandwidth/   the regulator, gang scheduling, resctrl CAT/MBA, Tegra, hypervisor colours
- experiment/  Solo / Interference / Protected on this host (paper 000 §4.4.3)

daemon.py starts a native daemon of this stage (monitor, regulator, gang) and stops it."""
