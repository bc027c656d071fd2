#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Check --json output and --progress-fd events against doc/schema.

    json-validate.py [--progress] [--kinds] SCHEMADIR FILE...

Every line of every FILE must be one JSON object (JSON Lines: no value
spread over lines, no blank line, no bare array), in valid UTF-8, that
validates against the JSON Schema (draft 2020-12) of its kind:
SCHEMADIR/PROGRAM-KIND.schema.json, SCHEMADIR/r4kit-error.schema.json
for kind "error". With --progress the lines are progress events
(SCHEMADIR/r4kit-progress.schema.json). An empty FILE is an error.
--kinds prints each line's "PROGRAM KIND" (the caller checks coverage).
Exit 0 when all is well, 1 with one message a line otherwise.
"""
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("json-validate.py: python3-jsonschema is not installed")


def main(argv):
    progress = kinds = False
    while argv and argv[0].startswith("--"):
        opt = argv.pop(0)
        if opt == "--progress":
            progress = True
        elif opt == "--kinds":
            kinds = True
        else:
            sys.exit("json-validate.py: unknown option " + opt)
    if len(argv) < 2:
        sys.exit(__doc__)
    sdir, files = argv[0], argv[1:]
    cache = {}

    def validator(name):
        if name not in cache:
            path = os.path.join(sdir, name + ".schema.json")
            if not os.path.exists(path):
                cache[name] = None
            else:
                with open(path, encoding="utf-8") as f:
                    schema = json.load(f)
                jsonschema.Draft202012Validator.check_schema(schema)
                cache[name] = jsonschema.Draft202012Validator(
                    schema, format_checker=jsonschema.FormatChecker())
        return cache[name]

    bad = 0
    for fn in files:
        with open(fn, "rb") as f:
            raw = f.read()
        if not raw:
            print("%s: no output" % fn)
            bad += 1
            continue
        if not raw.endswith(b"\n"):
            print("%s: the last line has no newline" % fn)
            bad += 1
        for no, line in enumerate(raw.split(b"\n")[:-1], 1):
            where = "%s:%d" % (fn, no)
            try:
                obj = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                print("%s: not one JSON value a line: %s: %r" %
                      (where, e, line[:80]))
                bad += 1
                continue
            if not isinstance(obj, dict):
                print("%s: not an object: %r" % (where, line[:80]))
                bad += 1
                continue
            if progress:
                name = "r4kit-progress"
            elif obj.get("kind") == "error":
                name = "r4kit-error"
            else:
                name = "%s-%s" % (obj.get("program"), obj.get("kind"))
            v = validator(name)
            if v is None:
                print("%s: no schema %s.schema.json for %r" %
                      (where, name, line[:80]))
                bad += 1
                continue
            errs = sorted(v.iter_errors(obj), key=lambda e: list(e.path))
            for e in errs[:3]:
                print("%s: %s: %s at %s" % (where, name, e.message,
                                           "/".join(map(str, e.path))))
            bad += bool(errs)
            if kinds and not errs:
                print(obj.get("program"), obj.get("kind"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
