"""The bash sub-policy: a command line parsed into the simple commands it runs, wrappers,
dangerous flags, what its words can become (a pattern that expands to a planted option) and
path operands found, and its hooks into the gate."""
