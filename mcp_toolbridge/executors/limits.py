"""A call's default limits, the settings' defaults too: apart from the executors' types, so
that reading the settings imports no executor module."""

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_OUTPUT_BYTES = 10 * 1024 * 1024
