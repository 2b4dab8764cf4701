"""Tokenisation for keyword search: Korean morphemes, lower-cased words in other scripts."""

from npc_memory.text.tokenize import PLAIN, STORED_SIDE, Analysis, TextOptions, Tokenizer

__all__ = ["PLAIN", "STORED_SIDE", "Analysis", "TextOptions", "Tokenizer"]
