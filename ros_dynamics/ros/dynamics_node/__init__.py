"""The dynamics node (``dynamics_node``, ``dynamics_lifecycle_node``): its cycle's engine, outputs,
wire format, services and parameters."""
