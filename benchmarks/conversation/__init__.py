"""Conversation recall benchmark: multi-session dialogues (Korean and English), generator and runner."""
