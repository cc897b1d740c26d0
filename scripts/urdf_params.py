#!/usr/bin/env python3
"""Write a ROS 2 parameter file that carries a robot's URDF as ``robot_description``.

    python scripts/urdf_params.py robot.urdf -o out/robot_params.yaml      # or a .xacro file
    .venv/bin/dynamics_node --ros-args --params-file config/dynamics.yaml \
        --params-file out/robot_params.yaml

A parameter file is the reliable way to hand a URDF to a node on the command line:
``-p robot_description:="$(cat robot.urdf)"`` does not work in general, because rcl parses
``-p`` values as YAML and ordinary XML (a comment ``<!-- a: b -->``, a ``#``) is not valid YAML
there. The file is written for every node name (``/**``), so the simulator can read it too.
"""
import argparse
import os
import sys

import yaml


def read_urdf(path, xacro_args=''):
    """URDF XML text of a .urdf file, or of a .xacro file expanded with the xacro module."""
    if path.endswith('.xacro'):
        import xacro
        mappings = dict(a.split(':=', 1) for a in xacro_args.split())
        return xacro.process_file(path, mappings=mappings).toxml()
    with open(path) as f:
        return f.read()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('urdf', help='URDF file, or xacro file (expanded with the xacro module)')
    ap.add_argument('--xacro-args', default='', help="xacro arguments 'name:=value ...'")
    ap.add_argument('--floating-base', action='store_true', help='also set floating_base: true')
    ap.add_argument('-o', '--out', default=None, help='output file (default: standard output)')
    args = ap.parse_args(argv)
    params = {'robot_description': read_urdf(args.urdf, args.xacro_args)}
    if args.floating_base:
        params['floating_base'] = True
    text = yaml.safe_dump({'/**': {'ros__parameters': params}}, default_flow_style=False)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        f.write(text)
    print(f'wrote {args.out}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
