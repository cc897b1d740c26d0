"""The controller nodes: ``tracking_controller`` (joint space) and ``wbc_controller`` (whole body),
fed by the dynamics node's stream."""
