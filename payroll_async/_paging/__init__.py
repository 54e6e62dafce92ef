"""_paging: see ARCHITECTURE.md."""
