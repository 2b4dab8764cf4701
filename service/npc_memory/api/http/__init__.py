"""The HTTP face: the memory inspector, gRPC-Web and MCP over HTTP, all calling the gRPC service itself."""
