"""Generated from proto/npc_memory/v1 by clients/generate. Do not edit."""
