"""The search loop of `nader-search`: the modification tree, strategies, evaluators and reports."""
