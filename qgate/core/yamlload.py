"""YAML loading that remembers where every key came from.

PyYAML's SafeLoader silently keeps the last of two equal keys and forgets
line numbers once it has built Python objects. Profile errors must name the
file, the line and the key path, so this module composes the node tree
itself, builds plain Python data from it, records the line of every key
path, and reports duplicate keys instead of dropping them.

Paths are tuples of mapping keys and list indices, e.g.
`("perf", "scenarios", 0, "input_tokens")`; lines are 1-based.

PyYAML's SafeLoader follows YAML 1.1, where the bare words yes/no/on/off are
booleans, `010` is octal 8 and `1:30` is 90 in base 60. Values are read here as
YAML 1.2 reads them (those are text, `010` stays text too), and every plain
scalar that the two versions read differently is listed in `ambiguous`, so
that a caller can refuse it instead of guessing what the writer meant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

KeyPath = tuple[Any, ...]

MAX_DEPTH = 64
"""Deepest nesting of mappings and lists accepted; a profile needs about 6.

PyYAML composes nodes recursively, so text nested thousands of levels deep
would end in a RecursionError instead of a message with a line.
"""

MAX_NODES = 20_000
"""Most values a document may hold, every alias expanded; a profile holds a few hundred.

PyYAML's pure-Python scanner reads about 10,000 values a second here, so the count is also
kept while composing: a megabyte of `[1, 1, 1, ...]` stops after MAX_NODES, not 50 s later.

An alias costs one node in the text but stands for its whole anchored value, so a few
lines of nested aliases (the "billion laughs") stand for billions of values, and merge keys
(`<<: [*a, *a]`) make PyYAML before 6.0.4 copy every pair while building. The count is
taken on the composed nodes before anything is built or merged, so such a document is
refused at once with every PyYAML.
"""


@dataclass(frozen=True)
class YamlProblem:
    """One problem found while reading the YAML text itself (not the schema)."""

    line: int | None
    path: KeyPath
    message: str


@dataclass(frozen=True)
class AmbiguousScalar:
    """A plain scalar that YAML 1.1 and YAML 1.2 read differently; the data holds its text."""

    line: int
    path: KeyPath
    text: str
    yaml11: Any
    """What YAML 1.1 (PyYAML's SafeLoader) makes of it: True, 8, 90, or the text itself."""

    def message(self) -> str:
        """Why it is refused and what to write instead, for a person."""
        shown = self.text if len(self.text) <= 24 else self.text[:21] + "..."
        if isinstance(self.yaml11, bool):
            return (
                f"YAML 1.1 reads the bare word {shown} as {str(self.yaml11).lower()} and YAML "
                f'1.2 as text: write true or false, or quote it ("{shown}")'
            )
        sign = "-" if self.text.startswith("-") else ""
        digits = sign + (self.text.replace("_", "").lstrip("+-").lstrip("0") or "0")
        if isinstance(self.yaml11, str):
            number = digits
            meant = f"YAML 1.1 reads {shown} as text and YAML 1.2 as the number {number}"
            instead = number
        elif ":" in self.text:
            meant = f"YAML 1.1 reads {shown} as {self.yaml11} (base 60) and YAML 1.2 as text"
            instead = str(self.yaml11)
        elif self.text.lstrip("+-").startswith("0b"):
            meant = f"YAML 1.1 reads {shown} as {self.yaml11} (binary) and YAML 1.2 as text"
            instead = str(self.yaml11)
        else:
            decimal = digits
            meant = f"YAML 1.1 reads {shown} as {self.yaml11} (octal) and YAML 1.2 as {decimal}"
            instead = f"{self.yaml11} or {decimal}"
        return f'{meant}: write {instead}, or quote it ("{shown}") for text'


@dataclass
class YamlDocument:
    """Plain data of one YAML document plus the line of every key path."""

    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)
    problems: list[YamlProblem] = field(default_factory=list)
    ambiguous: list[AmbiguousScalar] = field(default_factory=list)
    """Plain scalars read as YAML 1.2 reads them where YAML 1.1 differs (see the module)."""

    def line_of(self, path: KeyPath) -> int | None:
        """Line of `path`, or of its closest ancestor that has one."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None


class YamlSyntaxError(Exception):
    """Text that is not one YAML document; `line` is 1-based when known.

    `path` is the key path the problem is under, when it is known.
    """

    def __init__(self, message: str, line: int | None, path: KeyPath = ()) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.path = path


_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"

# What YAML 1.2's core schema reads as booleans and numbers (with PyYAML's `_` in digits).
_BOOL_12 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT_12 = re.compile(r"^(?:[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$")
_FLOAT_12 = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.VERBOSE,
)
# Plain scalars the two versions read differently: YAML 1.1's extra booleans, octal and
# binary and base-60 numbers, and digits with a leading zero (text in 1.1, decimal in 1.2).
_AMBIGUOUS = re.compile(
    r"""^(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF
    |[-+]?0[0-9_]+
    |[-+]?0b[0-1_]+
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)$""",
    re.VERBOSE,
)


def _yaml11(text: str) -> Any:
    """What PyYAML's SafeLoader (YAML 1.1) makes of one plain scalar."""
    return yaml.safe_load(text)


class _Loader(yaml.SafeLoader):
    """SafeLoader used only to scan and compose; construction happens in `_Builder`.

    Its booleans and numbers are YAML 1.2's (see the module's docstring).
    """

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _INT, _FLOAT)]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._where: list[Any] = []
        self._nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        # Stop at the first node too deep, before the recursion gets there.
        self._where.append(index.value if isinstance(index, yaml.ScalarNode) else index)
        self._nodes += 1
        try:
            if self._nodes > MAX_NODES:
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise YamlSyntaxError(
                    f"more than {MAX_NODES:,} values; a profile holds a few hundred",
                    event.start_mark.line + 1,
                )
            if len(self._where) > MAX_DEPTH:
                event = self.peek_event()  # type: ignore[no-untyped-call]
                # The outermost key is enough to find the place; the full path is 64 keys long.
                top = tuple(p for p in self._where[1:2] if p is not None)
                raise YamlSyntaxError(
                    f"nested more than {MAX_DEPTH} levels deep", event.start_mark.line + 1, top
                )
            return super().compose_node(parent, index)
        finally:
            self._where.pop()


_Loader.add_implicit_resolver(_BOOL, _BOOL_12, list("tTfF"))
_Loader.add_implicit_resolver(_INT, _INT_12, list("-+0123456789"))
_Loader.add_implicit_resolver(_FLOAT, _FLOAT_12, list("-+0123456789."))


def tab_problems(text: str) -> list[YamlProblem]:
    """Lines indented with tabs: YAML forbids them and PyYAML's message is cryptic."""
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent and line.strip():
            problems.append(
                YamlProblem(number, (), "tab character in indentation; YAML needs spaces")
            )
    return problems


def _syntax_error(exc: yaml.YAMLError) -> YamlSyntaxError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        text = exc.problem or exc.context or "invalid YAML"
        if exc.problem and exc.context:
            where = ""
            context_mark = exc.context_mark
            if context_mark is not None and mark is not None and context_mark.line != mark.line:
                where = f" on line {context_mark.line + 1}"
            text = f"{exc.problem} ({exc.context}{where})"
        return YamlSyntaxError(
            f"YAML syntax error: {text}", mark.line + 1 if mark is not None else None
        )
    return YamlSyntaxError(f"YAML syntax error: {exc}", None)


def _expansion_problem(root: yaml.Node) -> YamlSyntaxError | None:
    """A document standing for more than MAX_NODES values, or nested deeper than MAX_DEPTH,
    once its aliases are expanded; each distinct node is visited once (no recursion)."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    active: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in size:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if not done:
            if key in active:
                return YamlSyntaxError(
                    "YAML syntax error: recursive alias", node.start_mark.line + 1
                )
            active.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in size)
            continue
        active.discard(key)
        size[key] = 1 + sum(size[id(child)] for child in children)
        depth[key] = 1 + max((depth[id(child)] for child in children), default=0)
        line = node.start_mark.line + 1
        if size[key] > MAX_NODES:
            return YamlSyntaxError(
                f"YAML aliases expand this value to more than {MAX_NODES:,} values "
                "(an alias bomb?); write the values out or use fewer aliases",
                line,
            )
        if depth[key] > MAX_DEPTH:
            return YamlSyntaxError(
                f"YAML aliases nest this value more than {MAX_DEPTH} levels deep", line
            )
    return None


class _Builder:
    """Turns a composed node tree into plain data, lines and duplicate-key problems."""

    def __init__(self, loader: _Loader) -> None:
        self.loader = loader
        self.doc = YamlDocument(data=None)
        self._active: set[int] = set()
        self._built: dict[int, Any] = {}
        # Every (path, line) recorded, in order, and where each built node's own entries
        # lie in it, so that an alias's keys get the lines of the anchored value's keys.
        self._recorded: list[tuple[KeyPath, int]] = []
        self._span: dict[int, tuple[KeyPath, int, int]] = {}

    def _record(self, path: KeyPath, line: int) -> None:
        self.doc.lines[path] = line
        self._recorded.append((path, line))

    def _alias_lines(self, node: yaml.Node, path: KeyPath) -> None:
        """The keys under an alias, at the lines where the anchored value writes them."""
        span = self._span.get(id(node))
        if span is None:
            return
        anchored, start, end = span
        for inner, line in self._recorded[start:end]:
            self._record((*path, *inner[len(anchored) :]), line)

    def build(self, node: yaml.Node, path: KeyPath) -> Any:
        if id(node) in self._active:
            raise YamlSyntaxError("YAML syntax error: recursive alias", node.start_mark.line + 1)
        if id(node) in self._built:
            # An alias: the anchored value was built (and checked) where it was defined.
            self._alias_lines(node, path)
            return self._built[id(node)]
        self._active.add(id(node))
        start = len(self._recorded)
        try:
            value: Any
            if isinstance(node, yaml.MappingNode):
                value = self._mapping(node, path)
            elif isinstance(node, yaml.SequenceNode):
                value = []
                for index, item in enumerate(node.value):
                    self._record((*path, index), item.start_mark.line + 1)
                    value.append(self.build(item, (*path, index)))
            else:
                value = self.loader.construct_object(node, deep=True)
                if isinstance(node, yaml.ScalarNode) and node.style is None:
                    self._check_version(node, path)
            self._built[id(node)] = value
            self._span[id(node)] = (path, start, len(self._recorded))
            return value
        finally:
            self._active.discard(id(node))

    def _check_version(self, node: yaml.ScalarNode, path: KeyPath) -> None:
        if _AMBIGUOUS.match(node.value):
            self.doc.ambiguous.append(
                AmbiguousScalar(node.start_mark.line + 1, path, node.value, _yaml11(node.value))
            )

    def _mapping(self, node: yaml.MappingNode, path: KeyPath) -> dict[Any, Any]:
        # Resolves `<<: *anchor` merge keys the way SafeLoader does.
        # Merged pairs come first and explicit keys override them (YAML merge
        # semantics), so only explicit keys are checked for duplicates.
        explicit = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
        self.loader.flatten_mapping(node)
        merged = len(node.value) - explicit
        result: dict[Any, Any] = {}
        first_line: dict[Any, int] = {}
        for index, (key_node, value_node) in enumerate(node.value):
            key = self.loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                hash(key)
            except TypeError:
                self.doc.problems.append(YamlProblem(line, path, "a key must be a plain value"))
                continue
            if index >= merged and key in first_line:
                self.doc.problems.append(
                    YamlProblem(
                        line,
                        (*path, key),
                        f"duplicate key (first given on line {first_line[key]})",
                    )
                )
            elif index >= merged:
                first_line[key] = line
            self._record((*path, key), line)
            result[key] = self.build(value_node, (*path, key))
        return result


def load_yaml(text: str) -> YamlDocument:
    """Parse one YAML document; raise YamlSyntaxError on text that is not YAML.

    An empty document (or one holding only comments) gives `data=None`.
    Duplicate keys do not raise: they are listed in `problems` (the later
    value wins, as in PyYAML) so that a caller can report every problem at once.
    """
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.YAMLError as exc:
            raise _syntax_error(exc) from None
        builder = _Builder(loader)
        if node is None:
            return builder.doc
        expansion = _expansion_problem(node)
        if expansion is not None:
            raise expansion
        builder.doc.lines[()] = node.start_mark.line + 1
        try:
            builder.doc.data = builder.build(node, ())
        except yaml.YAMLError as exc:
            raise _syntax_error(exc) from None
        return builder.doc
    finally:
        loader.dispose()
