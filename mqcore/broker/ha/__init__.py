"""Master/slave replication: the master's HAService and the slave's HAClient."""
