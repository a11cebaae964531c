"""Bandwidth and partitioning mechanisms: the MemGuard-style regulator, RT-Gang gang
scheduling, resctrl's CAT and MBA (and paper 003's MBA design), Tegra's GPU throttling, and
colour assignments for static-partitioning hypervisors."""
