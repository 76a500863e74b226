"""Search spaces other than the open block language: cell spaces of tabular benchmarks."""
