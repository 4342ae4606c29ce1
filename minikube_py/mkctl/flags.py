"""Command-line flags as kubectl parses them: spf13/pflag, driven by cobra.

    --namespace=web   --namespace web   -n web   -nweb   -n=web
    --watch   --watch=false   -w   -Aw   -Aw=false          (booleans take no separate value)
    -L app -L tier   -L app,tier                            (string lists, comma separated)
    --                                                      (everything after is an argument)

Flags and arguments may be mixed in any order (`mkctl get pods -n web -o wide`), and the
global flags (`--kubeconfig`, `-n`, ...) are accepted by every command. Errors carry
pflag's exact wording ("unknown flag: --foo", "flag needs an argument: 'n' in -n").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

# The kinds of value a flag holds, as pflag's Value types.
BOOL = "bool"
STRING = "string"
INT = "int"
STRINGS = "strings"  # StringSlice: repeatable, each value split on commas
ARRAY = "array"  # StringArray: repeatable, each value kept whole

_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


class FlagError(Exception):
    """A command line pflag rejects; kubectl prints it with a "See '... --help'" line."""


class Flag(NamedTuple):
    """One flag: its long name, optional one-letter shorthand, kind, default and help."""

    name: str
    kind: str = STRING
    default: Any = None
    help: str = ""
    shorthand: str = ""

    def initial(self) -> Any:
        if self.default is not None:
            return list(self.default) if self.kind in (STRINGS, ARRAY) else self.default
        return {BOOL: False, STRING: "", INT: 0, STRINGS: [], ARRAY: []}[self.kind]

    def spelled(self) -> str:
        """How pflag names the flag in errors: "-w, --watch" or "--watch"."""
        return f"-{self.shorthand}, --{self.name}" if self.shorthand else f"--{self.name}"


def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


class Parsed:
    """The result of parsing: every flag's value, the ones set on the command line, and
    the positional arguments in order."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values
        self.changed: set[str] = set()
        self.args: list[str] = []
        self.dash = -1  # how many arguments came before `--` (cobra's ArgsLenAtDash)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


class FlagSet:
    """The flags one command accepts (its own plus the global ones)."""

    def __init__(self, flags: Iterable[Flag]) -> None:
        self.flags: dict[str, Flag] = {}
        self.shorthands: dict[str, Flag] = {}
        for flag in flags:
            self.flags[flag.name] = flag
            if flag.shorthand:
                self.shorthands[flag.shorthand] = flag

    def takes_value(self, arg: str) -> bool:
        """Whether a known flag argument (`-n`, `--context`) consumes the next argument."""
        if arg.startswith("--"):
            flag = self.flags.get(arg[2:])
        elif len(arg) == 2:
            flag = self.shorthands.get(arg[1])
        else:
            return False
        return flag is not None and flag.kind != BOOL and "=" not in arg

    def knows(self, arg: str) -> bool:
        """Whether `arg` (a flag argument) names a flag of this set."""
        if arg.startswith("--"):
            return arg[2:].split("=", 1)[0] in self.flags
        return all(char in self.shorthands for char in arg[1:2])

    def parse(self, arguments: list[str]) -> Parsed:
        """pflag's Parse with interspersed arguments: flags anywhere, `--` ends them."""
        parsed = Parsed({flag.name: flag.initial() for flag in self.flags.values()})
        remaining = list(arguments)
        while remaining:
            arg = remaining.pop(0)
            if arg == "--":
                parsed.dash = len(parsed.args)
                parsed.args.extend(remaining)
                break
            if arg.startswith("--"):
                self._parse_long(arg, remaining, parsed)
            elif arg.startswith("-") and arg != "-":
                self._parse_shorts(arg, remaining, parsed)
            else:
                parsed.args.append(arg)
        return parsed

    def _parse_long(self, arg: str, remaining: list[str], parsed: Parsed) -> None:
        name, has_value, value = arg[2:].partition("=")
        flag = self.flags.get(name)
        if flag is None:
            raise FlagError(f"unknown flag: --{name}")
        if not has_value:
            if flag.kind == BOOL:
                value = "true"
            elif remaining:
                value = remaining.pop(0)
            else:
                raise FlagError(f"flag needs an argument: {arg}")
        self._set(flag, value, parsed)

    def _parse_shorts(self, arg: str, remaining: list[str], parsed: Parsed) -> None:
        shorthands = arg[1:]
        while shorthands:
            char = shorthands[0]
            flag = self.shorthands.get(char)
            if flag is None:
                raise FlagError(f"unknown shorthand flag: '{char}' in {arg}")
            if len(shorthands) > 2 and shorthands[1] == "=":
                value, shorthands = shorthands[2:], ""
            elif flag.kind == BOOL:
                value, shorthands = "true", shorthands[1:]
            elif len(shorthands) > 1:
                value, shorthands = shorthands[1:], ""
            elif remaining:
                value, shorthands = remaining.pop(0), ""
            else:
                raise FlagError(f"flag needs an argument: '{char}' in {arg}")
            self._set(flag, value, parsed)

    @staticmethod
    def _set(flag: Flag, value: str, parsed: Parsed) -> None:
        try:
            if flag.kind == BOOL:
                converted: Any = parse_bool(value)
            elif flag.kind == INT:
                converted = _parse_int(value)
            elif flag.kind in (STRINGS, ARRAY):
                previous = parsed.values[flag.name] if flag.name in parsed.changed else []
                parts = [value] if flag.kind == ARRAY else value.split(",") if value else []
                converted = previous + parts
            else:
                converted = value
        except ValueError as error:
            raise FlagError(
                f'invalid argument "{value}" for "{flag.spelled()}" flag: {error}') from None
        parsed.values[flag.name] = converted
        parsed.changed.add(flag.name)


def _parse_int(text: str) -> int:
    """Go's strconv.ParseInt(text, 0, 64), with its error text."""
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None


# -- flags many commands share, with kubectl's help text ------------------------------------

SELECTOR_FLAG = Flag(
    "selector", shorthand="l",
    help="Selector (label query) to filter on, supports '=', '==', '!=', 'in', "
         "'notin'.(e.g. -l key1=value1,key2=value2,key3 in (value3)). Matching objects "
         "must satisfy all of the specified label constraints.")
FIELD_SELECTOR_FLAG = Flag(
    "field-selector",
    help="Selector (field query) to filter on, supports '=', '==', and '!='.(e.g. "
         "--field-selector key1=value1,key2=value2). The server only supports a limited "
         "number of field queries per type.")
ALL_NAMESPACES_FLAG = Flag(
    "all-namespaces", BOOL, shorthand="A",
    help="If present, list the requested object(s) across all namespaces. Namespace in "
         "current context is ignored even if specified with --namespace.")
