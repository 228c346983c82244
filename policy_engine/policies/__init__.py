"""Built-in policies. Every module here is imported by the registry, so a new policy only needs a module."""
