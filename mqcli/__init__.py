"""The `mq` command line and the Textual dashboard."""
