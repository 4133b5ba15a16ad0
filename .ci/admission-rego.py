#!/usr/bin/env python3
"""Runs the Rego of `semanifest admission --format gatekeeper` in a Rego
engine (regorus, through PyPI's opa-eval; .ci/python-requirements.txt), as
Gatekeeper would: each object is `input.review.object`, and the template's
`violation` set is what Gatekeeper reports.

  admission-rego.py TEMPLATE.yaml OBJECTS.json

OBJECTS.json is a JSON list of Kubernetes objects. Prints a JSON list, one
entry per object: {"violations": [message, ...], "errors": [...]}. Exit 2
when the template's Rego does not load.
"""

import json
import os
import sys
import tempfile

import opa_eval
import yaml


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        template = next(
            d for d in yaml.safe_load_all(f) if d and d.get("kind") == "ConstraintTemplate"
        )
    target = template["spec"]["targets"][0]
    rego = target["rego"]
    package = rego.split("\n", 1)[0].split()[1]
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "template.rego")
        with open(path, "w", encoding="utf-8") as f:
            f.write(rego)
        try:
            engine = opa_eval.OpaEval(path, query=f"data.{package}.violation")
        except Exception as error:
            print(f"the Rego does not load: {error}", file=sys.stderr)
            return 2
    with open(argv[2], encoding="utf-8") as f:
        objects = json.load(f)
    results = []
    for obj in objects:
        review = json.dumps({"review": {"object": obj}})
        try:
            found = engine.evaluate_parsed(review)
        except Exception as error:
            results.append({"violations": [], "errors": [str(error)]})
            continue
        violations = sorted(v["msg"] for v in (found or []))
        results.append({"violations": violations, "errors": []})
    json.dump(results, sys.stdout, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
