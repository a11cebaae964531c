"""The tours of `intercore demo`, all in one place: one per stage or story (model, compile,
learn, campaign, the user's program), each composed from the stages it shows. Above every stage
and the report, below the CLI."""
