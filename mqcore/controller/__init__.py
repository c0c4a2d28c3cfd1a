"""The controller of RocketMQ 5's controller mode: who is master of each broker set.

Brokers of a set register with it, report which replicas are in sync with their master,
and ask it to elect a new master when theirs is gone. Its state (the replicas, masters,
in-sync sets and their epochs) is a pure state machine (:mod:`.replicas`) changed only
by events (:mod:`.events`), replicated by Raft (:mod:`.raft`) so that every controller
node agrees on who is master. It sits beside the name server and never imports it or
the broker.
"""
