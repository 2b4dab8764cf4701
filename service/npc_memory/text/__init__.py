"""Tokenisation for keyword search: Korean morphemes, lower-cased words in other scripts."""

from npc_memory.text.tokenize import TextOptions, Tokenizer

__all__ = ["TextOptions", "Tokenizer"]
