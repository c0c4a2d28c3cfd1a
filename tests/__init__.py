"""The test suite: a package, so that every folder imports ``tests.support``."""
