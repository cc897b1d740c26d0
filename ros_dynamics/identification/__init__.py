"""Offline identification from recordings: friction, payload and contact thresholds
(:mod:`.calibration`, :mod:`.payload`, :mod:`.thresholds`), the whole model's inertial
parameters (:mod:`.whole_model`), exciting trajectories (:mod:`.excitation`), identified URDF
inertials (:mod:`.urdf_inertials`), reading ROS 2 bags (:mod:`.bags`) and the ``calibrate``
command (:mod:`.calibrate`).  It builds on :mod:`ros_dynamics.estimation` (the observer whose
residual it calibrates); the per-cycle modules there never import it."""
