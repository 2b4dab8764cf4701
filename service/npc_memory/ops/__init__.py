"""Running it in production: API keys, TLS, metrics, JSON logs and the one interceptor that applies them."""
