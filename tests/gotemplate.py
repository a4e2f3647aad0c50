"""A small renderer for the subset of Go templates (and Helm's functions) that `charts/pagemill` uses.

`helm` cannot be installed here, so the chart tests render the templates with this instead and then check the
YAML that comes out. It follows Go's `text/template` rules for what the chart uses — `{{-`/`-}}` trimming,
pipelines, variables and scopes, `if/else if/else`, `range` over lists and maps (sorted keys), `with`,
`define`/`include`/`template`, Helm's `.Values/.Release/.Chart/.Files` — and fails loudly on anything else, so
the chart cannot drift outside what is checked. Missing map keys read as nil like Helm; a field of nil is an
error like Helm's "nil pointer evaluating".
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class TemplateError(Exception):
    pass


# Lexing -------------------------------------------------------------------------------------------------------

_WS = " \t\r\n"


def _split(source: str) -> list[tuple[str, str]]:
    """[("text", s) | ("action", s)] with trim markers applied and comments dropped."""
    parts: list[tuple[str, str]] = []
    pos = 0
    trim_next = False
    while True:
        start = source.find("{{", pos)
        text = source[pos:] if start < 0 else source[pos:start]
        if trim_next:
            text = text.lstrip(_WS)
        if start < 0:
            parts.append(("text", text))
            return parts
        inner_start = start + 2
        trim_prev = source.startswith("- ", inner_start) or source.startswith("-\n", inner_start)
        if trim_prev:
            text = text.rstrip(_WS)
            inner_start += 1
        parts.append(("text", text))
        body_start = len(source) - len(source[inner_start:].lstrip(_WS))
        if source.startswith("/*", body_start):  # a comment ends at `*/` and may hold anything, `}}` included
            close = source.find("*/", body_start)
            match = re.compile(r"\s*(-?)\s*}}").match(source, close + 2) if close >= 0 else None
            if not match:
                raise TemplateError(f"unclosed comment at {source[start:start + 40]!r}")
            trim_next = match.group(1) == "-"
            pos = match.end()
            continue
        end = _action_end(source, inner_start)
        inner = source[inner_start:end]
        trim_next = inner.endswith(" -") or inner.endswith("\n-")
        if trim_next:
            inner = inner[:-1]
        inner = inner.strip()
        if not (inner.startswith("/*") and inner.endswith("*/")):
            parts.append(("action", inner))
        pos = end + 2


def _action_end(source: str, pos: int) -> int:
    quote = ""
    i = pos
    while i < len(source):
        ch = source[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"`":
            quote = ch
        elif source.startswith("}}", i):
            return i
        i += 1
    raise TemplateError(f"unclosed action at {source[pos - 2:pos + 40]!r}")


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<raw>`[^`]*`)
  | (?P<number>-?\d+(?:\.\d+)?)
  | (?P<decl>:=)
  | (?P<assign>=)
  | (?P<pipe>\|)
  | (?P<lparen>\()
  | (?P<rparen>\))
  | (?P<comma>,)
  | (?P<variable>\$\w*(?:\.\w+)*)
  | (?P<field>(?:\.\w+)+|\.)
  | (?P<ident>[A-Za-z_]\w*)
""", re.VERBOSE)


@dataclass
class Tok:
    kind: str
    text: str
    spaced: bool = False  # preceded by whitespace: `(x) .F` is two operands, `(x).F` a field of x


def _tokens(action: str) -> list[Tok]:
    out: list[Tok] = []
    pos = 0
    spaced = False
    while pos < len(action):
        match = _TOKEN.match(action, pos)
        if not match:
            raise TemplateError(f"cannot read {action[pos:]!r} in {{{{ {action} }}}}")
        kind = match.lastgroup or ""
        if kind == "ws":
            spaced = True
        else:
            out.append(Tok(kind, match.group(), spaced))
            spaced = False
        pos = match.end()
    return out


# Parsing ------------------------------------------------------------------------------------------------------


@dataclass
class Operand:
    kind: str  # string, number, bool, nil, field, variable, ident, pipeline
    value: Any
    chain: list[str] = field(default_factory=list)


@dataclass
class Pipeline:
    decl: list[str]
    assign: bool  # `=` (assign to an existing variable) rather than `:=`
    commands: list[list[Operand]]


@dataclass
class Node:
    kind: str  # text, action, if, range, with, define, template
    text: str = ""
    pipe: Pipeline | None = None
    body: list[Node] = field(default_factory=list)
    branches: list[tuple[Pipeline, list[Node]]] = field(default_factory=list)
    otherwise: list[Node] = field(default_factory=list)
    name: str = ""


class _PipeParser:
    def __init__(self, tokens: list[Tok]) -> None:
        self.tokens, self.pos = tokens, 0

    def peek(self) -> Tok | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def next(self) -> Tok:
        tok = self.peek()
        if tok is None:
            raise TemplateError("unexpected end of action")
        self.pos += 1
        return tok

    def pipeline(self, allow_decl: bool = True) -> Pipeline:
        decl: list[str] = []
        assign = False
        if allow_decl:
            save = self.pos
            names = []
            while (tok := self.peek()) is not None and tok.kind == "variable":
                names.append(self.next().text)
                if (sep := self.peek()) is not None and sep.kind == "comma":
                    self.next()
                    continue
                break
            if names and (tok := self.peek()) is not None and tok.kind in ("decl", "assign"):
                assign = self.next().kind == "assign"
                decl = names
            else:
                self.pos = save
        commands = [self.command()]
        while (tok := self.peek()) is not None and tok.kind == "pipe":
            self.next()
            commands.append(self.command())
        return Pipeline(decl, assign, commands)

    def command(self) -> list[Operand]:
        operands: list[Operand] = []
        while (tok := self.peek()) is not None and tok.kind not in ("pipe", "rparen"):
            operands.append(self.operand())
        if not operands:
            raise TemplateError("empty command")
        return operands

    def operand(self) -> Operand:
        tok = self.next()
        if tok.kind == "string":
            return Operand("string", json.loads(tok.text))
        if tok.kind == "raw":
            return Operand("string", tok.text[1:-1])
        if tok.kind == "number":
            return Operand("number", float(tok.text) if "." in tok.text else int(tok.text))
        if tok.kind == "field":
            return Operand("field", None, [p for p in tok.text.split(".") if p])
        if tok.kind == "variable":
            name, *chain = tok.text.split(".")
            return Operand("variable", name, chain)
        if tok.kind == "ident":
            if tok.text in ("true", "false"):
                return Operand("bool", tok.text == "true")
            if tok.text == "nil":
                return Operand("nil", None)
            return Operand("ident", tok.text)
        if tok.kind == "lparen":
            inner = self.pipeline(allow_decl=False)
            if self.next().kind != "rparen":
                raise TemplateError("missing )")
            chain: list[str] = []
            nxt = self.peek()
            if nxt is not None and nxt.kind == "field" and nxt.text != "." and not nxt.spaced:
                chain = [p for p in self.next().text.split(".") if p]
            return Operand("pipeline", inner, chain)
        raise TemplateError(f"unexpected {tok.text!r}")


def _parse_pipeline(text: str, allow_decl: bool = True) -> Pipeline:
    parser = _PipeParser(_tokens(text))
    pipe = parser.pipeline(allow_decl)
    if parser.peek() is not None:
        raise TemplateError(f"unexpected {parser.peek()!r} in {text!r}")
    return pipe


_KEYWORD = re.compile(r"^(if|else if|else with|else|end|range|with|define|template|block|break|continue)\b\s*(.*)$",
                      re.S)


def parse(source: str) -> tuple[list[Node], dict[str, list[Node]]]:
    """The top-level nodes and the `define`d templates."""
    defines: dict[str, list[Node]] = {}
    parts = _split(source)
    pos = 0

    def block(stop: tuple[str, ...]) -> tuple[list[Node], str, str]:
        nonlocal pos
        nodes: list[Node] = []
        while pos < len(parts):
            kind, text = parts[pos]
            pos += 1
            if kind == "text":
                if text:
                    nodes.append(Node("text", text=text))
                continue
            match = _KEYWORD.match(text)
            keyword, rest = (match.group(1), match.group(2)) if match else ("", text)
            if keyword in stop:
                return nodes, keyword, rest
            if keyword in ("break", "continue", "block", "else with"):
                raise TemplateError(f"{{{{ {keyword} }}}} is not supported by this renderer")
            if keyword in ("end", "else", "else if"):
                raise TemplateError(f"unexpected {{{{ {text} }}}}")
            if keyword == "if":
                node = Node("if")
                cond = _parse_pipeline(rest)
                while True:
                    body, ended, rest = block(("else if", "else", "end"))
                    node.branches.append((cond, body))
                    if ended == "else if":
                        cond = _parse_pipeline(rest)
                        continue
                    if ended == "else":
                        node.otherwise, _, _ = block(("end",))
                    break
                nodes.append(node)
            elif keyword in ("range", "with"):
                node = Node(keyword, pipe=_parse_pipeline(rest))
                node.body, ended, _ = block(("else", "end"))
                if ended == "else":
                    node.otherwise, _, _ = block(("end",))
                nodes.append(node)
            elif keyword == "define":
                name = json.loads(rest.strip())
                body, _, _ = block(("end",))
                defines[name] = body
            elif keyword == "template":
                name_match = re.match(r'^("(?:[^"\\]|\\.)*")\s*(.*)$', rest, re.S)
                if not name_match:
                    raise TemplateError(f"template needs a quoted name: {text!r}")
                arg = name_match.group(2).strip()
                nodes.append(Node("template", name=json.loads(name_match.group(1)),
                                  pipe=_parse_pipeline(arg) if arg else None))
            else:
                nodes.append(Node("action", pipe=_parse_pipeline(text)))
        if stop:
            raise TemplateError(f"missing {{{{ end }}}} (expected one of {stop})")
        return nodes, "", ""

    nodes, _, _ = block(())
    return nodes, defines


# Values and functions -----------------------------------------------------------------------------------------


def truthy(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, str | list | dict | tuple):
        return len(value) > 0
    return True


def to_text(value: Any) -> str:
    if value is None:
        return ""  # Helm turns "<no value>" into ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value)) if abs(value) < 1e6 else repr(value)
    if isinstance(value, dict | list):
        raise TemplateError(f"printing a {type(value).__name__} directly; use toYaml or toJson: {value!r}")
    return str(value)


_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LiteralDumper(_Dumper):  # type: ignore[misc]
    pass


def _str_representer(dumper: Any, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_LiteralDumper.add_representer(str, _str_representer)


def to_yaml(value: Any) -> str:
    if value is None:
        return "null"
    text = yaml.dump(value, Dumper=_LiteralDumper, default_flow_style=False, sort_keys=True, width=10_000)
    return text.removesuffix("\n").removesuffix("...").rstrip("\n")


def indent(spaces: int, text: str) -> str:
    pad = " " * spaces
    return pad + text.replace("\n", "\n" + pad)


def go_printf(fmt: str, *args: Any) -> str:
    def repl(match: re.Match[str]) -> str:
        verb = match.group(0)
        if verb == "%%":
            return "%"
        value = next(it)
        if verb in ("%s", "%v", "%d"):
            return to_text(value)
        if verb == "%q":
            return json.dumps(to_text(value))
        raise TemplateError(f"printf verb {verb} is not supported")

    it = iter(args)
    return re.sub(r"%[%sdvq]", repl, fmt)


def _required(message: str, value: Any) -> Any:
    if value is None or value == "":
        raise TemplateError(f"required: {message}")
    return value


def _fail(message: str) -> None:
    raise TemplateError(f"fail: {message}")


def _eq(first: Any, *others: Any) -> bool:
    return any(first == other for other in others)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "toYaml": to_yaml,
    "toJson": lambda v: json.dumps(v, separators=(",", ":")),
    "indent": indent,
    "nindent": lambda n, s: "\n" + indent(n, s),
    "quote": lambda *v: " ".join(json.dumps(to_text(x)) for x in v),
    "squote": lambda *v: " ".join("'" + to_text(x) + "'" for x in v),
    "default": lambda default, *value: value[0] if value and truthy(value[0]) else default,
    "required": _required,
    "fail": _fail,
    "printf": go_printf,
    "print": lambda *v: "".join(to_text(x) for x in v),
    "trunc": lambda n, s: s[:n] if n >= 0 else s[n:],
    "trimSuffix": lambda suffix, s: s.removesuffix(suffix),
    "trimPrefix": lambda prefix, s: s.removeprefix(prefix),
    "trim": lambda s: s.strip(),
    "replace": lambda old, new, s: s.replace(old, new),
    "lower": lambda s: s.lower(),
    "upper": lambda s: s.upper(),
    "b64enc": lambda s: base64.b64encode(to_text(s).encode()).decode(),
    "sha256sum": lambda s: hashlib.sha256(to_text(s).encode()).hexdigest(),
    "eq": _eq,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "not": lambda v: not truthy(v),
    "empty": lambda v: not truthy(v),
    "hasKey": lambda d, k: k in d,
    "dict": lambda *kv: {kv[i]: kv[i + 1] for i in range(0, len(kv), 2)},
    "list": lambda *v: list(v),
    "toString": to_text,
    "int": lambda v: int(float(v)) if v is not None else 0,
    "contains": lambda sub, s: sub in s,
    "hasPrefix": lambda prefix, s: s.startswith(prefix),
    "join": lambda sep, items: sep.join(to_text(x) for x in items),
    "len": len,
    "ternary": lambda yes, no, cond: yes if truthy(cond) else no,
    "merge": lambda dest, *sources: _merge(dest, *sources),  # noqa: PLW0108 - _merge is defined further down
    "keys": list,
    "sortAlpha": lambda items: sorted(to_text(x) for x in items),
    "add": lambda *v: sum(v),
    "mul": lambda a, b: a * b,
}


def _merge(dest: dict[str, Any], *sources: dict[str, Any]) -> dict[str, Any]:
    """Sprig's merge: keys already in dest win."""
    for source in sources:
        for key, value in source.items():
            if key not in dest:
                dest[key] = value
            elif isinstance(dest[key], dict) and isinstance(value, dict):
                _merge(dest[key], value)
    return dest


# Evaluation ---------------------------------------------------------------------------------------------------


class Files:
    """`.Files` of a chart: Get, Glob(...).AsConfig."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def Get(self, path: str) -> str:  # Helm's name
        target = self.root / path
        return target.read_text() if target.is_file() else ""

    def Glob(self, pattern: str) -> FileGlob:  # Helm's name
        paths = sorted(p for p in self.root.rglob("*")
                       if p.is_file() and fnmatch.fnmatch(str(p.relative_to(self.root)), pattern))
        return FileGlob(paths)


@dataclass
class FileGlob:
    paths: list[Path]

    def AsConfig(self) -> str:  # Helm's name
        return to_yaml({p.name: p.read_text() for p in self.paths})


class Renderer:
    def __init__(self, defines: dict[str, list[Node]]) -> None:
        self.defines = defines

    def render(self, nodes: list[Node], dot: Any, scopes: list[dict[str, Any]]) -> str:
        out: list[str] = []
        for node in nodes:
            out.append(self.node(node, dot, scopes))
        return "".join(out)

    def node(self, node: Node, dot: Any, scopes: list[dict[str, Any]]) -> str:
        if node.kind == "text":
            return node.text
        if node.kind == "action":
            assert node.pipe is not None
            value = self.pipeline(node.pipe, dot, scopes)
            return "" if node.pipe.decl else to_text(value)
        if node.kind == "if":
            for cond, body in node.branches:
                scope = [*scopes, {}]
                if truthy(self.pipeline(cond, dot, scope)):
                    return self.render(body, dot, scope)
            return self.render(node.otherwise, dot, [*scopes, {}])
        if node.kind == "with":
            assert node.pipe is not None
            scope = [*scopes, {}]
            value = self.pipeline(node.pipe, dot, scope)
            if truthy(value):
                return self.render(node.body, value, scope)
            return self.render(node.otherwise, dot, [*scopes, {}])
        if node.kind == "range":
            return self.range(node, dot, scopes)
        if node.kind == "template":
            arg = self.pipeline(node.pipe, dot, scopes) if node.pipe else None
            return self.include(node.name, arg)
        raise TemplateError(f"unknown node {node.kind}")

    def range(self, node: Node, dot: Any, scopes: list[dict[str, Any]]) -> str:
        assert node.pipe is not None
        pipe = Pipeline([], False, node.pipe.commands)
        collection = self.pipeline(pipe, dot, scopes)
        if isinstance(collection, dict):
            items = [(k, collection[k]) for k in sorted(collection)]
        elif isinstance(collection, list | tuple):
            items = list(enumerate(collection))
        elif collection is None:
            items = []
        else:
            raise TemplateError(f"range over {type(collection).__name__}")
        if not items:
            return self.render(node.otherwise, dot, [*scopes, {}])
        out = []
        for key, element in items:
            scope: dict[str, Any] = {}
            if len(node.pipe.decl) == 1:
                scope[node.pipe.decl[0]] = element
            elif len(node.pipe.decl) == 2:
                scope[node.pipe.decl[0]], scope[node.pipe.decl[1]] = key, element
            out.append(self.render(node.body, element, [*scopes, scope]))
        return "".join(out)

    def include(self, name: str, dot: Any) -> str:
        if name not in self.defines:
            raise TemplateError(f"no template {name!r}")
        return self.render(self.defines[name], dot, [{"$": dot}])

    def pipeline(self, pipe: Pipeline, dot: Any, scopes: list[dict[str, Any]]) -> Any:
        value: Any = _NO_ARG
        for command in pipe.commands:
            value = self.command(command, dot, scopes, value)
        if pipe.decl:
            name = pipe.decl[0]
            if pipe.assign:
                for scope in reversed(scopes):
                    if name in scope:
                        scope[name] = value
                        break
                else:
                    raise TemplateError(f"assignment to undeclared {name}")
            else:
                scopes[-1][name] = value
        return value

    def command(self, operands: list[Operand], dot: Any, scopes: list[dict[str, Any]], piped: Any) -> Any:
        head = operands[0]
        if head.kind == "ident" and head.value in ("and", "or"):
            # Go evaluates and/or lazily: `and .a .a.b` never touches .a.b when .a is nil.
            result: Any = None
            thunks = [lambda o=o: self.operand(o, dot, scopes) for o in operands[1:]]
            if piped is not _NO_ARG:
                thunks.append(lambda: piped)
            for thunk in thunks:
                result = thunk()
                if truthy(result) != (head.value == "and"):
                    return result
            return result
        if head.kind == "ident":
            args = [self.operand(o, dot, scopes) for o in operands[1:]]
            if piped is not _NO_ARG:
                args.append(piped)
            if head.value == "include":
                return self.include(args[0], args[1] if len(args) > 1 else None)
            if head.value not in FUNCTIONS:
                raise TemplateError(f"function {head.value!r} is not supported by this renderer")
            try:
                return FUNCTIONS[head.value](*args)
            except TemplateError:
                raise
            except Exception as exc:
                raise TemplateError(f"{head.value}{tuple(args)!r}: {exc}") from exc
        value = self.operand(head, dot, scopes)
        if callable(value):
            args = [self.operand(o, dot, scopes) for o in operands[1:]]
            if piped is not _NO_ARG:
                args.append(piped)
            return value(*args)
        if len(operands) > 1 or piped is not _NO_ARG:
            raise TemplateError("can't give an argument to a non-function")
        return value

    def operand(self, operand: Operand, dot: Any, scopes: list[dict[str, Any]]) -> Any:
        if operand.kind in ("string", "number", "bool", "nil"):
            return operand.value
        if operand.kind == "field":
            return _chain(dot, operand.chain)
        if operand.kind == "variable":
            for scope in reversed(scopes):
                if operand.value in scope:
                    return _chain(scope[operand.value], operand.chain)
            raise TemplateError(f"undefined variable {operand.value}")
        if operand.kind == "pipeline":
            return _chain(self.pipeline(operand.value, dot, scopes), operand.chain)
        if operand.kind == "ident":
            if operand.value in FUNCTIONS:
                return FUNCTIONS[operand.value]()
            raise TemplateError(f"function {operand.value!r} is not supported by this renderer")
        raise TemplateError(f"operand {operand.kind}")


_NO_ARG = object()


def _chain(value: Any, chain: list[str]) -> Any:
    for i, name in enumerate(chain):
        if value is None:
            raise TemplateError(f"nil pointer evaluating .{'.'.join(chain[:i + 1])}")
        if isinstance(value, dict):
            value = value.get(name)
        elif hasattr(value, name):
            value = getattr(value, name)
        else:
            raise TemplateError(f"can't evaluate field {name} in {type(value).__name__}")
    return value


class UniqueKeyLoader(_Loader):  # type: ignore[misc]
    """Refuses a mapping with the same key twice (PyYAML keeps the last one silently; Kubernetes rejects it)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
        duplicates = {k for k in keys if isinstance(k, str | int) and keys.count(k) > 1}
        if duplicates:
            raise TemplateError(f"duplicate keys {sorted(map(str, duplicates))} at line {node.start_mark.line + 1}")
        return super().construct_mapping(node, deep=deep)


# Helm ---------------------------------------------------------------------------------------------------------


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of `-f` values files onto the chart's values.yaml (null deletes a key)."""
    merged = dict(base)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@dataclass
class Chart:
    root: Path

    @property
    def metadata(self) -> dict[str, Any]:
        data: dict[str, Any] = yaml.safe_load((self.root / "Chart.yaml").read_text())
        return data

    def values(self, *files: Path) -> dict[str, Any]:
        values: dict[str, Any] = yaml.safe_load((self.root / "values.yaml").read_text())
        for path in files:
            values = deep_merge(values, yaml.safe_load(path.read_text()) or {})
        return values

    def render(self, values: dict[str, Any], *, release: str = "pagemill", namespace: str = "default",
               is_install: bool = True) -> dict[str, str]:
        """Template file name → rendered text, like `helm template`."""
        templates = sorted((self.root / "templates").glob("*"))
        defines: dict[str, list[Node]] = {}
        parsed: dict[str, list[Node]] = {}
        for path in templates:
            nodes, found = parse(path.read_text())
            defines.update(found)
            if not path.name.startswith("_") and path.suffix in (".yaml", ".yml", ".tpl"):
                parsed[path.name] = nodes
        meta = self.metadata
        root = {
            "Values": values,
            "Release": {"Name": release, "Namespace": namespace, "Service": "Helm", "IsInstall": is_install,
                        "IsUpgrade": not is_install, "Revision": 1},
            "Chart": {"Name": meta["name"], "Version": meta["version"], "AppVersion": meta.get("appVersion", "")},
            "Files": Files(self.root),
            "Capabilities": {"KubeVersion": {"Version": "v1.30.0"}},
        }
        renderer = Renderer(defines)
        out = {}
        for name, nodes in parsed.items():
            try:
                out[name] = renderer.render(nodes, root, [{"$": root}])
            except TemplateError as exc:
                raise TemplateError(f"{name}: {exc}") from exc
        return out

    def manifests(self, values: dict[str, Any], **kwargs: Any) -> list[dict[str, Any]]:
        """Every non-empty YAML document the chart renders, each tagged with its template in `_template`."""
        docs = []
        for name, text in self.render(values, **kwargs).items():
            try:
                loaded = list(yaml.load_all(text, Loader=UniqueKeyLoader))
            except yaml.YAMLError as exc:
                raise TemplateError(f"{name} does not render to valid YAML: {exc}\n{text}") from exc
            for doc in loaded:
                if doc:
                    doc["_template"] = name
                    docs.append(doc)
        return docs
