"""Every node's parameter file and reference, generated from their tables: config/dynamics.yaml
and docs/parameters.md (``python -m ros_dynamics.ros.parameter_files --write``)."""
import os
import sys


def tables():
    """Every node's table, in the order of docs/parameters.md (imports the node modules)."""
    from .control.tracking_controller import PARAMETERS as TRACKING
    from .control.wbc_node import PARAMETERS as WBC
    from .dynamics_node.parameters import TABLE
    from .simulation.mujoco_sim_node import PARAMETERS as SIM_MUJOCO
    from .simulation.sim_node import PARAMETERS as SIM
    return (TABLE, SIM, TRACKING, WBC, SIM_MUJOCO)


def yaml_text():
    from .dynamics_node.parameters import TABLE
    return TABLE.yaml_text(head=('# Reference: docs/parameters.md. Lists are double arrays: '
                                 'write [20.0], not 20.0.',))


def markdown_text():
    every = tables()
    lines = ['# Parameters', '',
             'Generated from the parameter table of each node (`ros_dynamics/ros/dynamics_node/parameters.py` '
             'for the dynamics node, `PARAMETERS` in `sim_node.py`, `tracking_controller.py`, '
             '`wbc_node.py` and `mujoco_sim_node.py`, one machinery: `ros_dynamics/ros/parameter_table.py`) by '
             '`python -m ros_dynamics.ros.parameter_files --write`. A running node describes each '
             'parameter, its range and its rule to `ros2 param describe`; a value outside the '
             'rules is refused with the rule (at start-up the node exits with status 2 and '
             'says which). Nodes: ' + ', '.join(f'[`{t.node}`](#{t.node})' for t in every)
             + '.', '']
    return '\n'.join(lines + [t.markdown_text() for t in every])


def generated_files(root):
    return {os.path.join(root, 'config', 'dynamics.yaml'): yaml_text(),
            os.path.join(root, 'docs', 'parameters.md'): markdown_text()}


if __name__ == '__main__':
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if '--write' in sys.argv:
        for path, text in generated_files(root).items():
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write(text)
            print(f'wrote {path}')
    else:
        sys.stdout.write(markdown_text())
