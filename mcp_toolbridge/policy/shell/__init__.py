"""The bash sub-policy: a command line parsed into the simple commands it runs, wrappers,
dangerous flags and path operands found, and its hooks into the gate."""
