"""Built-in scenarios; every module here is imported by the scenario registry."""
