#!/usr/bin/env python3
"""A module's sources are compiled as unity files (STEPSCOPE_UNITY_BUILD), so the helpers a source
keeps in its anonymous namespace share one namespace with its neighbours'. Two of the same name
either fail to compile (the same signature) or, worse, compile: a call in one source then finds
the other's helper first and takes it through a conversion (a `write_json(path, std::string)` took
the JSON of another command's `write_json(path, json)` and threw at run time). This check refuses
a helper of an anonymous namespace whose name is also a function defined in another source of the
same module, or declared in a header the module reads (src/<module>/*.hpp, include/stepscope/).

    unity_names.py ROOT      -> "ok: N helpers in M modules" (exit 0), or one line per clash (exit 1)
"""
import collections
import pathlib
import re
import sys

# A function's definition or declaration at the start of a line: "std::string ms(double ns) {".
FUNCTION = re.compile(r"^(?:inline |static |constexpr |template <[^>]*> )*[A-Za-z_][\w:<>,\s*&]*?[\s*&]([a-z_][a-z_0-9]*)\(")
KEYWORDS = ("return", "else", "if", "for", "while", "switch", "case")


def functions(path, anonymous_only):
    names, anonymous = set(), False
    for line in path.read_text(errors="replace").splitlines():
        if re.match(r"^namespace\s*\{", line):
            anonymous = True
            continue
        if re.match(r"^\}\s*//\s*namespace\s*$", line):
            anonymous = False
            continue
        m = FUNCTION.match(line)
        if m and not line.startswith(KEYWORDS) and (anonymous or not anonymous_only):
            names.add(m.group(1))
    return names


def clashes(root):
    public = set()
    for h in (root / "include" / "stepscope").rglob("*.hpp"):
        public |= functions(h, False)
    out, helpers, modules = [], 0, 0
    for module in sorted(p for p in (root / "src").iterdir() if p.is_dir()):
        sources = sorted(module.rglob("*.cpp"))
        if not sources:
            continue
        modules += 1
        own = set(public)
        for h in module.rglob("*.hpp"):
            own |= functions(h, False)
        defined = collections.defaultdict(set)
        for s in sources:
            for name in functions(s, False):
                defined[name].add(s)
        for s in sources:
            for name in sorted(functions(s, True)):
                helpers += 1
                others = sorted(str(o.relative_to(root)) for o in defined[name] - {s})
                if others or name in own:
                    where = ", ".join(others) if others else "a header the module reads"
                    out.append(f"{s.relative_to(root)}: helper '{name}' is also defined in {where}: give it a name of its own")
    return out, helpers, modules


def main():
    if len(sys.argv) != 2:
        print("usage: unity_names.py ROOT", file=sys.stderr)
        return 2
    found, helpers, modules = clashes(pathlib.Path(sys.argv[1]))
    for line in found:
        print(line)
    if not found:
        print(f"ok: {helpers} helpers in {modules} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
