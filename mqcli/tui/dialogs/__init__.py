"""Modal dialogs, one per module (the app pauses refreshing while one is open)."""
