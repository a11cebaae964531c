"""The stages of `intercore demo`, each composed from the stages it shows: model (detect,
analyse, validate on this host) and campaign (run the small example, report it). Above every
stage and the report, below the CLI."""
