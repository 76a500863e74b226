"""Benchmarks of the agents, with their data (written for this project)."""
