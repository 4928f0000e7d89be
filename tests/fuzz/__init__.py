"""The fuzz suite (issue 15): every entry point, a short profile by default, a long one with AMBER_FUZZ=long."""
