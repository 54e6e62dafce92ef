"""One request, done properly: the transport's loop over attempts, an attempt's steps, the
retry policy, the gate, tokens, options, and answers made typed errors."""
