"""intercore: find, measure, predict and mitigate multi-core interference."""

__version__ = "0.1.0"
