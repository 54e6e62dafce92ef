"""_core: see ARCHITECTURE.md."""
