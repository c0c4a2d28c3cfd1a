"""One module per `mq` subcommand; each exposes ``register(app)``."""
