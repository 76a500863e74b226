"""One module per `nadc` subcommand (see nader.compiler.cli.COMMANDS)."""
