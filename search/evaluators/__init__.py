"""Evaluators that answer a trial without training: tabular benchmarks."""
