# One setools process for every query of a semanifest run (see setools.rs).
#
# Reads one JSON request a line from stdin:
#     {"tool": "seinfo" | "sesearch", "args": [...], "policy": PATH}
# and answers each with one JSON line: {"out": TEXT} (exactly what the
# command `TOOL PATH ARGS...` prints) or {"unsupported": WHY} (the caller
# runs the command itself) or {"error": MESSAGE}. Each policy is loaded
# once. Only the argument forms semanifest uses are answered here; the
# queries are setools' own, with the rule filter of sesearch done on names
# (one pass over the rules, no per-rule regex): the tests compare every
# answer with the commands' output.

import itertools
import json
import os
import re
import sys

import setools

# The rule order allow_rules() relies on is setools 4.4's (and later's);
# any other walks every rule.
try:
    from setools.policyrep import FileNameTERule

    if tuple(int(x) for x in setools.__version__.split(".")[:2]) < (4, 4):
        FileNameTERule = None
except (ImportError, ValueError):
    FileNameTERule = None

policies = {}
target_names = {}
allow_cache = {}


def policy(path):
    # A file rewritten at the same path is another policy.
    info = os.stat(path)
    key = (path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in policies:
        policies[key] = setools.SELinuxPolicy(path)
    return policies[key]


def seinfo(p, args):
    wanted = set()
    expand = False
    for arg in args:
        if arg == "-x":
            expand = True
        elif arg in ("-t", "-a", "-c", "--common", "-b"):
            wanted.add(arg)
        else:
            return None
    if not wanted:
        return None

    def statement(item):
        return item.statement()

    def expand_attr(attr):
        items = "\n\t".join(sorted(str(i) for i in attr.expand()))
        return "{0}\n\t{1}".format(attr.statement(), items if items else "<empty attribute>")

    # seinfo's order and rendering.
    components = []
    if "-b" in wanted:
        components.append(("Booleans", setools.BoolQuery(p), statement))
    if "-c" in wanted:
        components.append(("Classes", setools.ObjClassQuery(p), statement))
    if "--common" in wanted:
        components.append(("Commons", setools.CommonQuery(p), statement))
    if "-t" in wanted:
        components.append(("Types", setools.TypeQuery(p), statement))
    if "-a" in wanted:
        components.append(("Type Attributes", setools.TypeAttributeQuery(p), expand_attr))
    lines = []
    for desc, query, expander in components:
        results = sorted(query.results())
        lines.append("\n{0}: {1}".format(desc, len(results)))
        for item in results:
            lines.append("   {0}".format(expander(item) if expand else item))
    return "\n".join(lines) + "\n"


def matching_targets(p, pattern):
    """Types whose name matches, and attributes with such a member: what
    sesearch's indirect regex match on the target accepts."""
    key = (id(p), pattern)
    if key not in target_names:
        regex = re.compile(pattern)
        names = {str(t) for t in p.types() if regex.search(str(t))}
        for attr in p.typeattributes():
            if any(str(m) in names for m in attr.expand()):
                names.add(str(attr))
        target_names[key] = names
    return target_names[key]


def sesearch(p, args):
    allow = False
    target = None
    target_regex = False
    classes = None
    perms = None
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "-A":
            allow = True
        elif arg == "-rt":
            target_regex = True
        elif arg in ("-t", "-c", "-p") and rest:
            value = rest.pop(0)
            if arg == "-t":
                target = value
            elif arg == "-c":
                classes = set(value.split(","))
            else:
                perms = set(value.split(","))
        else:
            return None
    if not allow or (target is not None and not target_regex):
        return None
    targets = matching_targets(p, target) if target is not None else None
    found = []
    for rule, rule_target, rule_class in allow_rules(p):
        if targets is not None and rule_target not in targets:
            continue
        if classes is not None and rule_class not in classes:
            continue
        if perms is not None and not perms & {str(x) for x in rule.perms}:
            continue
        found.append(rule)
    return "".join("{0}\n".format(rule) for rule in sorted(found))


def allow_rules(p):
    """The policy's allow rules with their target and class names, read
    once per policy (a build asks two questions of the store's).

    setools 4.4's terules() yields the rule table, then the name-based type
    transitions (three quarters of a distribution policy's rules, none an
    allow rule), then each conditional's rules: where that holds, the walk
    stops at the first name-based transition and takes the conditional
    rules from the conditionals, at half the cost. (setools' own count of
    allow rules would check it, but counting walks every rule.)"""
    if id(p) not in allow_cache:
        kind = setools.TERuletype.allow
        if FileNameTERule is None:
            rules = [rule for rule in p.terules() if rule.ruletype == kind]
        else:
            rules = []
            for rule in p.terules():
                if isinstance(rule, FileNameTERule):
                    break
                if rule.ruletype == kind:
                    rules.append(rule)
            for conditional in p.conditionals():
                for rule in itertools.chain(conditional.true_rules(), conditional.false_rules()):
                    if rule.ruletype == kind:
                        rules.append(rule)
        allow_cache[id(p)] = [(rule, str(rule.target), str(rule.tclass)) for rule in rules]
    return allow_cache[id(p)]


def answer(request):
    tool = request["tool"]
    handler = {"seinfo": seinfo, "sesearch": sesearch}.get(tool)
    if handler is None:
        return {"unsupported": tool}
    out = handler(policy(request["policy"]), request["args"])
    if out is None:
        return {"unsupported": " ".join(request["args"])}
    return {"out": out}


for line in sys.stdin:
    try:
        reply = answer(json.loads(line))
    except Exception as error:  # reported to the caller, which says which query
        reply = {"error": "{0}: {1}".format(type(error).__name__, error)}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
