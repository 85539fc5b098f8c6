"""Options declared once: a dataclass field made with `option()` carries its flag help (and
choices), `define_flags` turns such fields into absl flags, and `flag_values` reads them back as
the dataclass's keyword arguments. The runner, its --help and the library's defaults cannot
drift apart. A subclass that declares a field again (another default or help) changes that
runner's flag only; a field declared again without option() is not a flag.

    @dataclasses.dataclass(kw_only=True)
    class EvalOptions:
        eval_every_steps: int = option(0, "Evaluate every this many steps (0: never).")

    define_flags(EvalOptions)                 # --eval_every_steps, default 0, that help
    EvalOptions(**flag_values(EvalOptions))   # what the command line said
"""

import dataclasses
import typing

from absl import flags

_HELP, _CHOICES, _FLAG_DEFAULT, _MULTI = ("bert_tf_help", "bert_tf_choices",
                                          "bert_tf_flag_default", "bert_tf_multi")


def option(default, help, *, choices=None, required=False, multi=False):
    """A dataclass field that is also a command-line flag (list defaults are copied).
    required=True: the dataclass needs the value (no default), the flag's default is
    `default` (the job's validation names what is missing). multi=True: a list of strings
    given by repeating the flag (--text=a --text=b) rather than comma-separated."""
    metadata = {_HELP: help, _CHOICES: tuple(choices) if choices else None,
                _FLAG_DEFAULT: default, _MULTI: multi}
    if required:
        return dataclasses.field(metadata=metadata)
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def option_like(cls, name, **changes):
    """A new option() field like `cls`'s field `name` (its default, help, choices), but for
    `changes` (option()'s arguments): one help text for a flag several runners take."""
    field = flag_fields(cls, [name])[0]
    arguments = dict(default=field_default(field), help=field_help(field),
                     choices=field_choices(field), multi=field.metadata[_MULTI])
    return option(**dict(arguments, **changes))


def flag_fields(cls, names=None):
    """The option() fields of dataclass `cls` (only `names`, in that order, when given)."""
    fields = {f.name: f for f in dataclasses.fields(cls) if _HELP in f.metadata}
    if names is None:
        return list(fields.values())
    missing = [n for n in names if n not in fields]
    if missing:
        raise KeyError(f"{cls.__name__} declares no option {', '.join(missing)}")
    return [fields[n] for n in names]


def _base_type(annotation):
    """int for `int`, `int | None` or Optional[int]."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return args[0] if args else annotation


def field_default(field):
    """The value an option() field's flag defaults to."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    if field.default is dataclasses.MISSING:
        return field.metadata.get(_FLAG_DEFAULT)
    return field.default


def field_help(field):
    return field.metadata[_HELP]


def field_choices(field):
    """The values an option() field allows, or None when any value of its type goes."""
    return field.metadata[_CHOICES]


def non_defaults(options, names):
    """The flags ("--name") of `names` whose value in dataclass instance `options` is not the
    field's default: the options a command line (or caller) gave."""
    fields = {f.name: f for f in dataclasses.fields(options)}
    return [f"--{name}" for name in names
            if getattr(options, name) != field_default(fields[name])]


def option_values(options):
    """{name: value} of the option() fields of dataclass instance `options` (JSON-ready: the
    values of flags are bools, numbers, strings, lists or None)."""
    return {f.name: getattr(options, f.name) for f in flag_fields(type(options))}


def define_flags(cls, names=None, flag_values=flags.FLAGS):
    """Defines one absl flag per option() field of `cls` (or of `names`), typed by its
    annotation: bool, int, float, str (an enum when the option has choices) or list (a
    repeated flag when the option is multi)."""
    for field in flag_fields(cls, names):
        kind, default = _base_type(field.type), field_default(field)
        help_text, choices = field_help(field), field_choices(field)
        args = (field.name, default, help_text)
        if field.metadata.get(_MULTI):
            flags.DEFINE_multi_string(*args, flag_values=flag_values)
        elif choices:
            flags.DEFINE_enum(field.name, default, list(choices), help_text,
                              flag_values=flag_values)
        elif kind is bool:
            flags.DEFINE_bool(*args, flag_values=flag_values)
        elif kind is int:
            flags.DEFINE_integer(*args, flag_values=flag_values)
        elif kind is float:
            flags.DEFINE_float(*args, flag_values=flag_values)
        elif kind in (list, typing.List) or typing.get_origin(kind) is list:
            flags.DEFINE_list(*args, flag_values=flag_values)
        elif kind is str:
            flags.DEFINE_string(*args, flag_values=flag_values)
        else:
            raise TypeError(f"{cls.__name__}.{field.name}: no flag type for {field.type!r}")


def flag_values(cls, names=None, flag_values=flags.FLAGS):
    """{name: parsed value} of the option() fields of `cls` that are defined as flags."""
    return {f.name: flag_values[f.name].value for f in flag_fields(cls, names)
            if f.name in flag_values}
