"""A listing walked: the paginator, a page and its next, the offset and Link walks, and
pages decoded into models."""
