"""Lives on a Ray cluster: each server life an actor on a node with what it needs.

`placement` (pure): what a life needs from a node and which node each life of
a wave gets. `ray_api`: the one place `ray` is imported (deferred; heavy),
connecting and listing nodes. `host`: the actor, on the node: it starts the
engine there as the local run would (same command building, its own process
group, a guard that kills the group if the actor dies), reports its address and
streams its log. `life`: the driver's side of one life, a runtime like any
other that the suites talk to over HTTP. `waves`: lives started together,
attribution's rounds among them. `plan`: which lives run together and the
expected wall time against the local plan. docs/cluster.md says what runs where.
"""
