"""The Python client: producers, consumers, admin, and the route and rebalance logic."""
