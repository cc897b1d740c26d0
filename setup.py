from glob import glob

from setuptools import find_packages, setup

package_name = 'ros_dynamics'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(include=[package_name, package_name + '.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.py')),
        ('share/' + package_name + '/config', glob('config/*.yaml') + glob('config/*.rviz')),
        ('share/' + package_name + '/urdf', glob('urdf/*.urdf') + glob('urdf/*.xacro')),
    ],
    install_requires=['setuptools', 'numpy', 'numba', 'xacro', 'pyyaml'],
    extras_require={
        # what the executables import beyond install_requires (package.xml: the rosdep keys)
        'viewer': ['viser', 'trimesh', 'urdf-parser-py'],          # viewer
        'calibrate': ['rosbags', 'matplotlib', 'cvxpy>=1.9', 'scipy>=1.17'],   # calibrate
        'wbc': ['proxsuite>=0.8.0'],                                # wbc_controller (its QP)
        'contact_forces': ['proxsuite>=0.8.0'],                     # contact_frames (its QP)
        'test': ['pytest', 'pin', 'example-robot-data', 'urdf-parser-py', 'matplotlib', 'pillow',
                 'viser', 'trimesh', 'websockets', 'rosbags', 'proxsuite>=0.8.0', 'mujoco>=4.0', 'cvxpy>=1.9',
                 'scipy>=1.17'],
    },
    zip_safe=False,
    maintainer='ros_dynamics maintainers',
    maintainer_email='maintainers@ros-dynamics.invalid',
    description='Mass matrix, Coriolis matrix, dM/dt, gravity and Christoffel symbols for ROS 2.',
    license='BSD-3-Clause',
    entry_points={
        'console_scripts': [
            'dynamics_node = ros_dynamics.ros.dynamics_node.node:main',
            'dynamics_lifecycle_node = ros_dynamics.ros.dynamics_node.managed_node:main',
            'sim = ros_dynamics.ros.simulation.sim_node:main',
            'sim_mujoco = ros_dynamics.ros.simulation.mujoco_sim_node:main',
            'tracking_controller = ros_dynamics.ros.control.tracking_controller:main',
            'wbc_controller = ros_dynamics.ros.control.wbc_node:main',
            'calibrate = ros_dynamics.identification.calibrate:main',
            'viewer = ros_dynamics.ros.viewer:main',
        ],
    },
)
