"""One mutation operator per module; `nader.compiler.mutate.table` lists them in `OPERATORS`."""
