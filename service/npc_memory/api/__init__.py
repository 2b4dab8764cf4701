"""The gRPC surface: thin servicers, proto ↔ domain conversion, validation and error mapping."""
