#!/usr/bin/env python3
"""Validate JSON documents against a JSON Schema (draft 2020-12).

Usage: validate-json.py SCHEMA FILE...

Checks the schema itself first (exit 2 when it is not a valid draft 2020-12
schema), then prints one JSON line per FILE: {"file": ..., "valid": bool,
"errors": [...]}. Exit 0 when every file is valid, 1 when one is not, 2 when
the validator is not set up (see .ci/python-requirements.txt).
"""

import json
import sys

try:
    import jsonschema
except ImportError:
    print("validate-json: python jsonschema is not installed; "
          "run scripts/install-deps and use .venv/bin/python3", file=sys.stderr)
    sys.exit(2)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        schema = json.load(f)
    if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
        print(f"validate-json: {argv[0]} is not a draft 2020-12 schema", file=sys.stderr)
        return 2
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as error:
        print(f"validate-json: {argv[0]}: invalid schema: {error.message}", file=sys.stderr)
        return 2
    validator = jsonschema.Draft202012Validator(schema)
    status = 0
    for path in argv[1:]:
        with open(path, encoding="utf-8") as f:
            instance = json.load(f)
        errors = [
            f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
            for error in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
        ]
        print(json.dumps({"file": path, "valid": not errors, "errors": errors}))
        if errors:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
