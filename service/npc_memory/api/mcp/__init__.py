"""The MCP face: the memory as tools for an LLM-driven NPC, on the official ``mcp`` SDK."""
