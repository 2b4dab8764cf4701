"""Searches ranked from scopes held in memory: the rows as columns, kept current, their candidates gathered."""
