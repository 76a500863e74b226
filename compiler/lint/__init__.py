"""Lint: style and suspicious-but-valid patterns (NAD4xx), one rule per module in rules/."""
