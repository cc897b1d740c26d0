"""Where the bundled robot descriptions are (source tree, pip install, or colcon/ament install)."""

import os
import sys

BUNDLED = ('arm7.urdf', 'quadruped.urdf')


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(os.path.dirname(os.path.dirname(here)), 'urdf')                  # source tree / editable
    yield os.path.join(sys.prefix, 'share', 'ros_dynamics', 'urdf')    # pip data_files
    try:                                                               # ament (colcon install)
        from ament_index_python.packages import get_package_share_directory
        yield os.path.join(get_package_share_directory('ros_dynamics'), 'urdf')
    except Exception:
        pass


def bundled_urdf(name='arm7.urdf'):
    """Absolute path of a bundled URDF ('arm7.urdf' or 'quadruped.urdf')."""
    if not name.endswith(('.urdf', '.xacro')):
        name += '.urdf'
    for folder in _candidates():
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f'bundled robot {name!r} not found (looked next to the package and in share/)')
