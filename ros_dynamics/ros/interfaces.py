"""The message and service types of the dynamics node, with the interface package optional.

Without ``ros_dynamics_msgs`` the node runs with its standard-type outputs only
(``~/external_torque``, ``~/gravity_torque``) and says once how to build the package
(:data:`BUILD_HINT`).
"""
from builtin_interfaces.msg import Time  # noqa: F401
from geometry_msgs.msg import Point, Pose, Vector3, Wrench  # noqa: F401
from nav_msgs.msg import Odometry  # noqa: F401
from sensor_msgs.msg import JointState  # noqa: F401
from std_msgs.msg import String  # noqa: F401
from std_srvs.srv import Trigger  # noqa: F401

try:
    from ros_dynamics_msgs.msg import Christoffel, ContactEstimate, Dynamics
    from ros_dynamics_msgs.srv import (EstimatePayload, GetChristoffel, GetDynamics,
                                       GetOperationalSpace)
    HAVE_MSGS = True
except ImportError:  # pragma: no cover - exercised by a test in a separate process
    Christoffel = ContactEstimate = Dynamics = None
    EstimatePayload = GetChristoffel = GetDynamics = GetOperationalSpace = None
    HAVE_MSGS = False

try:    # newer than the rest of the package: an older build keeps the other outputs
    from ros_dynamics_msgs.msg import TaskSpace
    from ros_dynamics_msgs.srv import GetTaskSpace
    HAVE_TASK_SPACE = True
except ImportError:  # pragma: no cover - an interface package built before TaskSpace existed
    TaskSpace = GetTaskSpace = None
    HAVE_TASK_SPACE = False

try:    # newer still
    from ros_dynamics_msgs.srv import GetLinearization
    HAVE_LINEARIZATION = True
except ImportError:  # pragma: no cover - an interface package built before GetLinearization
    GetLinearization = None
    HAVE_LINEARIZATION = False

try:    # newer still
    from ros_dynamics_msgs.msg import ContactForces
    HAVE_CONTACT_FORCES = True
except ImportError:  # pragma: no cover - an interface package built before ContactForces
    ContactForces = None
    HAVE_CONTACT_FORCES = False

BUILD_HINT = (
    'the interface package ros_dynamics_msgs is not installed: only the standard-type outputs '
    '~/external_torque and ~/gravity_torque (sensor_msgs/JointState) are published; ~/dynamics, '
    '~/christoffel, ~/contact_estimate and the data services are off. Build it: in a clone of '
    'ros_dynamics run scripts/build_interfaces.sh (scripts/setup_env.sh does it); on a ROS 2 '
    'system `colcon build --paths <repo> <repo>/ros_dynamics_msgs` and source '
    'install/setup.bash (README, "Your robot in ROS")')
