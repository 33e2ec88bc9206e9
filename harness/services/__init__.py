"""harness/services package."""
