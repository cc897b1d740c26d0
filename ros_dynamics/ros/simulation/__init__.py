"""The simulator nodes: ``sim`` (the rigid-body simulator) and ``sim_mujoco`` (a MuJoCo plant)."""
