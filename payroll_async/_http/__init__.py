"""_http: see ARCHITECTURE.md."""
