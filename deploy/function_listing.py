"""Import a Function App from its package folder alone and print its functions as JSON.

Run by the package's own interpreter, isolated (`python -I`), so nothing from the
development tree can stand in for a file the package lacks:

    python -I deploy/function_listing.py <package-folder>

Prints one object per function: name, trigger type and every binding's settings, as the
Functions host reads them (`FunctionApp.get_functions()`). Standard library only.
"""

import json
import os
import sys


def list_functions(package_dir: str) -> list[dict]:
    os.chdir(package_dir)
    sys.path.insert(0, package_dir)
    from function_app import app  # noqa: E402  (the package's, by construction)

    listing = []
    for function in app.get_functions():
        bindings = [json.loads(raw) for raw in function.get_raw_bindings()]
        trigger = function.get_trigger()
        listing.append({"name": function.get_function_name(), "trigger": trigger.type, "bindings": bindings})
    return listing


if __name__ == "__main__":
    print(json.dumps(list_functions(os.path.abspath(sys.argv[1])), indent=2))
