"""The foundation: errors, types, checks, the converter, JSON, settings, clocks and
outside text made safe. Imports nothing of the package above it."""
