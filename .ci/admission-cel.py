#!/usr/bin/env python3
"""Runs the CEL of `semanifest admission`'s output in an independent CEL
engine (cel-python, .ci/python-requirements.txt), as the API server would.

  admission-cel.py compile POLICY.yaml
      Compiles every variable, validation and messageExpression of each
      ValidatingAdmissionPolicy or Kyverno ClusterPolicy in POLICY.yaml.
      Prints one line per expression that does not compile; exit 1 if any.

  admission-cel.py evaluate POLICY.yaml OBJECTS.json
      OBJECTS.json is a JSON list of Kubernetes objects. Prints a JSON list,
      one entry per object: {"violations": [message, ...], "errors": [...]}.
      A validation that is false is a violation (its messageExpression, or
      its message); one that fails to evaluate is an error (the policy's
      failurePolicy: Fail then refuses the object too).

Variables are evaluated in order and bound as `variables.NAME`, as the API
server binds them, and `request` holds the request's kind, name, namespace
and operation (CREATE); nulls are dropped from objects first, as the API
server drops them when it decodes a request.
"""

import json
import sys

import celpy
import yaml


def cel_programs(document):
    """(variables, validations) of a policy document, as written."""
    kind = document.get("kind")
    if kind == "ValidatingAdmissionPolicy":
        spec = document["spec"]
        return spec.get("variables", []), spec.get("validations", [])
    if kind == "ClusterPolicy":
        variables, validations = [], []
        for rule in document["spec"]["rules"]:
            cel = rule["validate"]["cel"]
            variables += cel.get("variables", [])
            validations += cel.get("expressions", [])
        return variables, validations
    return None


def policies(path):
    with open(path, encoding="utf-8") as f:
        for document in yaml.safe_load_all(f):
            found = document and cel_programs(document)
            if found:
                yield found


def compile_all(env, variables, validations):
    programs, errors = {}, []

    def build(label, text):
        try:
            return env.program(env.compile(text))
        except Exception as error:  # celpy raises several types
            errors.append(f"{label}: {error}".replace("\n", " "))
            return None

    for variable in variables:
        programs[("variable", variable["name"])] = build(
            f"variable {variable['name']}", variable["expression"]
        )
    for index, validation in enumerate(validations):
        programs[("validation", index)] = build(
            f"validation {index}", validation["expression"]
        )
        if "messageExpression" in validation:
            programs[("message", index)] = build(
                f"messageExpression {index}", validation["messageExpression"]
            )
    return programs, errors


def without_nulls(value):
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value if v is not None]
    return value


def run(program, activation):
    try:
        result = program.evaluate(activation)
    except Exception as error:
        return None, str(error)
    if isinstance(result, celpy.CELEvalError):
        return None, str(result)
    return result, None


def request_of(obj):
    """The admission request's attributes that the policy reads."""
    metadata = obj.get("metadata", {})
    group, _, version = obj.get("apiVersion", "").rpartition("/")
    return celpy.json_to_cel(
        {
            "kind": {"group": group, "version": version, "kind": obj.get("kind", "")},
            "name": metadata.get("name", ""),
            "namespace": metadata.get("namespace", ""),
            "operation": "CREATE",
        }
    )


def evaluate(variables, validations, programs, obj):
    bound = {}
    errors = []
    request = request_of(obj)
    for variable in variables:
        activation = {
            "object": celpy.json_to_cel(obj),
            "request": request,
            "variables": celpy.celtypes.MapType(bound),
        }
        value, error = run(programs[("variable", variable["name"])], activation)
        if error is not None:
            errors.append(f"variable {variable['name']}: {error}")
            continue
        bound[celpy.celtypes.StringType(variable["name"])] = value
    activation = {
        "object": celpy.json_to_cel(obj),
        "request": request,
        "variables": celpy.celtypes.MapType(bound),
    }
    violations = []
    for index, validation in enumerate(validations):
        value, error = run(programs[("validation", index)], activation)
        if error is not None:
            errors.append(f"validation {index}: {error}")
            continue
        if value is True or value == celpy.celtypes.BoolType(True):
            continue
        message = validation.get("message", "")
        if ("message", index) in programs:
            text, error = run(programs[("message", index)], activation)
            if error is not None:
                errors.append(f"messageExpression {index}: {error}")
            else:
                message = str(text)
        violations.append(message)
    return {"violations": violations, "errors": errors}


def main(argv):
    env = celpy.Environment()
    if len(argv) == 3 and argv[1] == "compile":
        failed = False
        count = 0
        for variables, validations in policies(argv[2]):
            programs, errors = compile_all(env, variables, validations)
            count += len(programs)
            for error in errors:
                print(error)
                failed = True
        if count == 0:
            print(f"{argv[2]}: no ValidatingAdmissionPolicy or ClusterPolicy with CEL")
            return 1
        print(f"compiled {count} expressions", file=sys.stderr)
        return 1 if failed else 0
    if len(argv) == 4 and argv[1] == "evaluate":
        found = list(policies(argv[2]))
        if len(found) != 1:
            print(f"{argv[2]}: expected one policy, found {len(found)}", file=sys.stderr)
            return 2
        variables, validations = found[0]
        programs, errors = compile_all(env, variables, validations)
        if errors:
            print("\n".join(errors), file=sys.stderr)
            return 2
        with open(argv[3], encoding="utf-8") as f:
            objects = json.load(f)
        results = [
            evaluate(variables, validations, programs, without_nulls(obj))
            for obj in objects
        ]
        json.dump(results, sys.stdout, ensure_ascii=False)
        print()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
