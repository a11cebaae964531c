"""Experiment campaigns (SP-IMPact): a configuration space generated from one file, planned,
enforced where the host can, run resumably and reported."""
