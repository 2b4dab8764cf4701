"""The running service: start-up (runtime), the gRPC server (serve) and what runs beside it (background)."""

from npc_memory.server.serve import bind_host, create_server, serving

__all__ = ["bind_host", "create_server", "serving"]
