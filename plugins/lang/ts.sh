#!/usr/bin/env bash
# TypeScript plugins build like JavaScript ones (plugins/lang/js.sh
# type-checks and compiles the .ts sources first):
#
#   plugins/lang/ts.sh DIR OUT      (normally run by plugins/build.sh ts DIR)
exec "$(dirname "$0")/js.sh" "$@"
