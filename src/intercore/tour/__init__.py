"""The tours of `intercore demo` that compose several stages: model (detect and analyse with
the model stage, validate with the measure stage) and campaign (run the small example with
the campaign runner, render it with the report). Above every stage and the report, below the
CLI; a tour of one stage alone stays in its stage (compile/tour.py)."""
