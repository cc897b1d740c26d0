#!/usr/bin/env python3
"""The simulator node of the demo, with the wall and push scenario on a chosen contact link.

    python scripts/demo_sim.py CONTACT_LINK --ros-args --params-file sim.yaml

The simulator node picks its scenario's contact link itself (the deepest link of the robot);
the demo on a user's robot (``scripts/demo.sh --urdf FILE --contact-link LINK``) needs that
link chosen. This starts the same node with ``make_scenario(..., contact_link=LINK)``; the demo
checks in the simulator's log that the link was used.
"""
import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ros_dynamics.simulation import simulator  # noqa: E402
from ros_dynamics.ros.simulation import sim_node  # noqa: E402

if __name__ == '__main__':
    link = sys.argv.pop(1)
    simulator.make_scenario = functools.partial(simulator.make_scenario, contact_link=link)
    sys.exit(sim_node.main())
