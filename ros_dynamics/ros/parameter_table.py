"""One declarative parameter table per node, and everything derived from it.

Every node of the package (``dynamics_node``, ``sim``, ``tracking_controller``,
``wbc_controller``) states its parameters as one :class:`ParameterTable` of :class:`Param`
entries (the idea of generate_parameter_library: one table per node, one machinery).  Each
entry gives the type (from the default, or ``type`` for a typed parameter without a default),
the default, the description, the range, the allowed lengths of an array, the choices, and what
a change affects (``start-up``: read-only).  From the table come

* the validation (:meth:`ParameterTable.validate`: a :class:`Config`, or ValueError naming the
  rule);
* the ROS parameter descriptors (:func:`descriptor`: what ``ros2 param describe`` shows) and
  the declaration of every parameter on a node (:meth:`ParameterTable.declare`: a start-up
  value outside the rules is refused with :class:`ParameterError`, which
  :func:`ros_dynamics.ros.process.run` reports as one line and exit status 2);
* the parameter file (:meth:`ParameterTable.yaml_text`) and the reference section of
  ``docs/parameters.md`` (:meth:`ParameterTable.markdown_text`), written by
  ``python -m ros_dynamics.ros.parameter_files --write``.

No rclpy is needed except for :func:`descriptor` and :meth:`ParameterTable.declare`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

BIG = 1e12
_TYPE_NAMES = {bool: 'bool', int: 'integer', float: 'double', str: 'string'}


class ParameterError(ValueError):
    """A parameter value a node cannot start with (the message names the node and the rule)."""


@dataclass(frozen=True)
class Param:
    name: str
    default: object                  # None: no default (``type`` gives the type; unset)
    description: str
    affects: str = 'output'          # what a change does; 'start-up': read-only
    minimum: float | None = None     # scalars: the value; arrays: every element
    maximum: float | None = None
    exclusive_minimum: bool = False
    lengths: tuple | None = None     # allowed lengths of an array (None: any, at least 1)
    choices: tuple | None = None
    norm_max: float | None = None    # arrays: bound on the Euclidean norm
    item: str = 'double'             # arrays: 'double' or 'string' elements
    type: str = ''                   # with default None: 'double[]' or 'string[]'

    @property
    def read_only(self):
        return self.affects == 'start-up'

    @property
    def is_array(self):
        return isinstance(self.default, list) or self.type.endswith('[]')

    @property
    def element(self):
        """'double' or 'string': the elements of an array."""
        return self.type[:-2] if self.type else self.item

    @property
    def type_name(self):
        if self.is_array:
            return f'{self.element}[]'
        return _TYPE_NAMES[type(self.default)]

    @property
    def in_parameter_file(self):
        """Whether a parameter file can hold the default: neither an empty list (no type in a
        ROS parameter file) nor no default at all."""
        return self.default is not None and not (isinstance(self.default, list)
                                                 and not self.default)

    def constraint_text(self):
        parts = []
        if self.choices:
            parts.append('one of ' + ', '.join(self.choices))
        if self.lengths:
            parts.append(' or '.join(map(str, self.lengths)) + ' elements')
        if self.minimum is not None or self.maximum is not None:
            lo = ('' if self.minimum is None else
                  f'{self.minimum:g} {"<" if self.exclusive_minimum else "<="} ')
            hi = '' if self.maximum is None else f' <= {self.maximum:g}'
            parts.append(f'{lo}{"each value" if self.is_array else "value"}{hi}')
        if self.norm_max is not None:
            parts.append(f'norm <= {self.norm_max:g}')
        return '; '.join(parts)

    def check(self, value):
        """The value as the node uses it (arrays as tuples; None for an unset parameter
        without default), or ValueError naming the rule."""
        if self.default is None and (value is None or (
                isinstance(value, (list, tuple)) and not value)):
            return None                     # unset (an empty list is unset too)
        if self.is_array and self.element == 'string':
            return self._strings(value)
        d = self.default
        if isinstance(d, bool):
            if not isinstance(value, bool):
                raise ValueError(f'{self.name} must be true or false')
            return value
        if isinstance(d, str):
            if not isinstance(value, str):
                raise ValueError(f'{self.name} must be a string')
            if self.choices and value not in self.choices:
                raise ValueError(f'{self.name} must be one of {", ".join(self.choices)}, '
                                 f'not {value!r}')
            return value
        if self.is_array:
            if isinstance(value, (bool, str, bytes)) or value is None:
                raise ValueError(f'{self.name} must be a list of numbers')
            values = [value] if isinstance(value, (int, float)) else list(value)
            try:
                values = tuple(float(x) for x in values)
            except (TypeError, ValueError):
                raise ValueError(f'{self.name} must be a list of numbers') from None
            if not values or (self.lengths and len(values) not in self.lengths):
                raise ValueError(f'{self.name} must have '
                                 f'{self.constraint_text() or "at least 1 element"}, got '
                                 f'{len(values)}')
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f'{self.name} must be a number')
            values = (value,)
        for x in values:
            ok = math.isfinite(x)
            if ok and self.minimum is not None:
                ok = x > self.minimum if self.exclusive_minimum else x >= self.minimum
            if ok and self.maximum is not None:
                ok = x <= self.maximum
            if not ok:
                raise ValueError(f'{self.name} must be finite, {self.constraint_text()}; '
                                 f'got {x!r}')
        if self.norm_max is not None and math.hypot(*values) > self.norm_max:
            raise ValueError(f'{self.name} must have {self.constraint_text()}')
        if self.is_array:
            return values
        return int(value) if isinstance(d, int) else float(value)

    def _strings(self, value):
        if value is None:
            # an empty list on the command line or in a parameter file (-p frames:=[]) has no
            # element to take a type from: rcl gives it no value at all; it is the empty list
            return ()
        if isinstance(value, (str, bytes)):
            raise ValueError(f'{self.name} must be a list of strings')
        try:
            values = tuple(value)
        except TypeError:
            raise ValueError(f'{self.name} must be a list of strings') from None
        if not all(isinstance(x, str) and x for x in values):
            raise ValueError(f'{self.name} must be a list of non-empty strings')
        return values


class Config:
    """A validated set of parameter values of one table (attributes by name; arrays as
    tuples)."""

    def __init__(self, table, values):
        self._table = table
        for p in table.params:
            setattr(self, p.name, values[p.name])

    def changed(self, other):
        return [p.name for p in self._table.params
                if getattr(self, p.name) != getattr(other, p.name)]

    def replace(self, **changes):
        return self._table.validate({**{p.name: getattr(self, p.name)
                                        for p in self._table.params}, **changes})


def descriptor(p):
    """The rcl_interfaces/ParameterDescriptor of ``p`` (ranges for scalar numbers; the rule
    text in additional_constraints)."""
    from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                    ParameterType)
    kw = dict(description=p.description, read_only=p.read_only,
              additional_constraints=p.constraint_text())
    d = p.default
    if p.is_array and p.element == 'string' and d is None:
        kw['type'] = ParameterType.PARAMETER_STRING_ARRAY
    elif p.is_array and p.element == 'string':
        # an empty default has no ROS type (rclpy would take it for a byte array and then
        # refuse every list of strings): any type is let through, validate() checks it
        kw['dynamic_typing'] = True
    elif p.is_array:
        kw['type'] = ParameterType.PARAMETER_DOUBLE_ARRAY
    elif isinstance(d, (bool, str)):
        pass
    elif p.minimum is None or p.maximum is None:
        pass                      # a one-sided rule: in additional_constraints only
    elif isinstance(d, int):
        kw['integer_range'] = [IntegerRange(from_value=int(p.minimum), to_value=int(p.maximum),
                                            step=1)]
    else:
        kw['floating_point_range'] = [FloatingPointRange(
            from_value=float(p.minimum), to_value=float(p.maximum), step=0.0)]
    return ParameterDescriptor(**kw)


def _rclpy_value(p):
    """What ``declare_parameter`` gets: the default, or the type of a parameter without one."""
    if p.default is not None:
        return p.default
    from rclpy.parameter import Parameter
    return {'double[]': Parameter.Type.DOUBLE_ARRAY,
            'string[]': Parameter.Type.STRING_ARRAY}[p.type]


def yaml_value(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, str):
        return '""' if not v else v
    if isinstance(v, list):
        return '[' + ', '.join(str(x) if isinstance(x, str) else repr(float(x)) for x in v) + ']'
    if v is None:
        return 'unset'
    return repr(v)


class ParameterTable:
    """The parameters of one node (module text).

    ``entries``: :class:`Param` objects, or ``(name, default, description)`` tuples (a
    parameter with no rule but its type); ``affects`` is what a change of a tuple entry
    affects.  ``rules``: callables on the dict of checked values that raise ValueError for a
    combination the entries cannot state alone.  ``about``: the paragraph of its section in
    ``docs/parameters.md``."""

    def __init__(self, node, entries, rules=(), about='', affects='start-up'):
        self.node = node
        self.params = tuple(e if isinstance(e, Param) else Param(*e, affects=affects)
                            for e in entries)
        self.by_name = {p.name: p for p in self.params}
        if len(self.by_name) != len(self.params):
            raise ValueError(f'{node}: a parameter is declared twice')
        self.rules = tuple(rules)
        self.about = about

    def __iter__(self):
        return iter(self.params)

    def __len__(self):
        return len(self.params)

    def validate(self, values):
        """A :class:`Config` from a dict of every parameter's value; :class:`ParameterError`
        (a ValueError) with the reason."""
        try:
            checked = {p.name: p.check(values[p.name]) for p in self.params}
            for rule in self.rules:
                rule(checked)
        except ParameterError:
            raise
        except ValueError as exc:
            raise ParameterError(str(exc)) from None
        return Config(self, checked)

    def defaults(self):
        return self.validate({p.name: p.default for p in self.params})

    def declare(self, node):
        """Declare every parameter on ``node`` (an rclpy Node) with its descriptor and return
        the validated :class:`Config` of the values it starts with; :class:`ParameterError`
        (named rule, the value) when one is refused."""
        from rclpy.exceptions import (InvalidParameterTypeException,
                                      InvalidParameterValueException)
        values = {}
        for p in self.params:
            try:
                values[p.name] = node.declare_parameter(p.name, _rclpy_value(p),
                                                        descriptor(p)).value
            except InvalidParameterValueException as exc:   # outside the descriptor's range
                raise ParameterError(f'{node.get_name()}: {p.name} must be '
                                     f'{p.constraint_text()} ({exc})') from None
            except InvalidParameterTypeException as exc:    # e.g. an integer for a double
                raise ParameterError(f'{node.get_name()}: {p.name} must be a {p.type_name} '
                                     f'({exc})') from None
        try:
            return self.validate(values)
        except ValueError as exc:
            raise ParameterError(f'{node.get_name()}: {exc}') from None

    # -------------------------------------------------------------- generated files
    def yaml_text(self, head=()):
        lines = [f'# Parameters of {self.node} with their defaults (generated from its '
                 'parameter table:', '# python -m ros_dynamics.ros.parameter_files --write).',
                 *head, '/**:', '  ros__parameters:']
        for p in self.params:
            lines.append(f'    # {p.description} [{p.affects}]')
            if p.in_parameter_file:
                lines.append(f'    {p.name}: {yaml_value(p.default)}')
            else:
                why = ('no default' if p.default is None else
                       'an empty list cannot be written in a parameter file')
                lines.append(f'    # {p.name}: {yaml_value(p.default)}   (default; {why})')
        return '\n'.join(lines) + '\n'

    def markdown_text(self, level=2):
        lines = [f'{"#" * level} `{self.node}`', '']
        if self.about:
            lines += [self.about, '']
        lines += ['| name | type | default | allowed | affects | description |',
                  '|---|---|---|---|---|---|']
        for p in self.params:
            default = yaml_value(p.default).replace('|', '\\|')
            lines.append(f'| `{p.name}` | {p.type_name} | `{default}` | {p.constraint_text()} '
                         f'| {p.affects} | {p.description} |')
        return '\n'.join(lines) + '\n'
