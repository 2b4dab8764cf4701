"""Tokenisation for keyword search: Korean morphemes, lower-cased words in other scripts."""

from npc_memory.text.tokenize import Analysis, TextOptions, Tokenizer

__all__ = ["Analysis", "TextOptions", "Tokenizer"]
