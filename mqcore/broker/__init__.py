"""The broker: request processors, client and offset management, long polling."""
