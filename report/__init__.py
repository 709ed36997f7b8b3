"""Results tables rendered from results/ records (see __main__ for the command)."""
