"""Stage 1, Model: platform models (PHYLOG) and the interference calculus.

A platform model (YAML, see docs/platform-model.md) describes hardware as initiators,
transporters and targets, software as transactions through them, plus configuration and
assumptions. `loader.load` reads one; `calculus.analyze` classifies every set of k
transactions that can run together as interference (with its channel), interference-free or
redundant; `channels.build_table` turns that into the channel table a certification engineer
expects; `detect` writes the model of this host. Checking a model's verdicts on the host is a
measurement (measure/model_validation.py, which also reads back the verdicts it stored); the
model runs nothing and reads no store: its caller hands it the evidence.
"""

from .calculus import Analysis, analyze
from .channels import ChannelTable, build_table
from .loader import load, loads
from .platform import Platform

__all__ = ["Analysis", "ChannelTable", "Platform", "analyze", "build_table", "load", "loads"]
