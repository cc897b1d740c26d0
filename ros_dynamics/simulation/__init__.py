"""The simulator (no ROS), by concern:

* :mod:`.plant`: the robot integrated under motor torques, external wrenches and contact
  models, with sensors and plant mismatch (joint friction, an unknown payload);
* :mod:`.scenarios`: home poses, joint limits and the ready-to-run :func:`make_scenario`;
* :mod:`.evaluation`: the observer against the ground truth (:func:`simulate_observer`,
  :func:`detection_metrics`);
* :mod:`.rigid_simulator` (rigid contacts by the OS LCP) and :mod:`.external` (efforts from
  outside) build on the plant.
"""

from .evaluation import detection_metrics, runs, simulate_observer
from .plant import (PDGravityController, Sample, Simulator, WallContact, WrenchContact,
                    integrate, link_point_position, plant_model)
from .scenarios import (SCENARIOS, bundled_urdf, clip_to_limits, deepest_links, home_pose,
                        make_scenario, perturb_urdf_inertia)

__all__ = ['detection_metrics', 'runs', 'simulate_observer', 'PDGravityController', 'Sample',
           'Simulator', 'WallContact', 'WrenchContact', 'integrate', 'link_point_position',
           'plant_model', 'SCENARIOS', 'bundled_urdf', 'clip_to_limits', 'deepest_links',
           'home_pose', 'make_scenario', 'perturb_urdf_inertia']
