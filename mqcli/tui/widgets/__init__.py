"""Small widgets of the dashboard, each in Textual's widget shape."""
