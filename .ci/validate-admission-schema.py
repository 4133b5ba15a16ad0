#!/usr/bin/env python3
"""Validates every document of a YAML stream against the JSON Schema
definition named by its `kind`:

  validate-admission-schema.py SCHEMA.json OBJECTS.yaml

Exit 0 when every document is valid, 1 (one line per error) when one is
not or its kind has no definition, 2 on unreadable input.
"""

import json
import sys

import jsonschema
import yaml


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    with open(argv[2], encoding="utf-8") as f:
        documents = [d for d in yaml.safe_load_all(f) if d is not None]
    errors = []
    for index, document in enumerate(documents):
        kind = document.get("kind")
        if kind not in schema["$defs"]:
            errors.append(f"document {index}: no schema for kind {kind!r}")
            continue
        root = dict(schema, **{"$ref": f"#/$defs/{kind}"})
        validator = jsonschema.Draft202012Validator(root)
        for error in validator.iter_errors(document):
            path = "/".join(str(p) for p in error.absolute_path)
            errors.append(f"{kind} /{path}: {error.message}")
    for error in errors:
        print(error)
    if not documents:
        print(f"{argv[2]}: no documents")
        return 1
    print(f"validated {len(documents)} documents", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
