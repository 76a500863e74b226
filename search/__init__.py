"""The search loop, its strategies, search spaces and evaluators (`nader-search`)."""
