#!/usr/bin/env bash
# Builds a JavaScript plugin (plugins/sdk/js) into a component of world
# `scheduler-plugin` with jco componentize (StarlingMonkey by default):
#
#   plugins/lang/js.sh DIR OUT      (normally run by plugins/build.sh)
#
# DIR: the plugin's directory: main.js or main.ts, or its only .js/.ts file,
# is the plugin module; it imports the SDK as "wasmsched" and does
# `export default definePlugin({...})`; relative imports of other files of
# DIR work (from TypeScript, import "./util.js" for util.ts). TypeScript is
# type-checked (strict) against sdk/js/wasmsched.d.ts and compiled first.
# Installs jco and componentize-js from npm into
# $HOME/.cache/wasmsched/toolchains/js when missing.
#
# Engine (WASMSCHED_JS_BACKEND): `starlingmonkey` (the default) builds with
# `-d all` (no WASI import at all); `quickjs` builds with the QuickJS backend
# and --backend-qjs-stub-wasi: smaller and faster, but its adapter module
# has several memories, which the host refuses (multi-memory is off), and
# componentize-qjs 0.4.5 drops borrowed handles only after the call returns,
# so wasmtime would trap every call that receives the pod or the nodes. Use
# it once both are fixed.
set -euo pipefail
dir="$(cd "${1:?usage: js.sh DIR OUT}" && pwd)"
out="${2:?usage: js.sh DIR OUT}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
plugins="${WASMSCHED_PLUGINS:-$(cd "$(dirname "$0")/.." && pwd)}"
wit="$(cd "${WASMSCHED_WIT:-$plugins/../wit}" && pwd)"
sdk="$plugins/sdk/js"
JCO_VERSION=1.35.0
COMPONENTIZE_JS_VERSION=0.23.0
tc="${WASMSCHED_TOOLCHAINS:-$HOME/.cache/wasmsched/toolchains}/js"
jco="$tc/node_modules/.bin/jco"

fail() { echo "js.sh: $*" >&2; exit 1; }

installed() {
  node -e 'const [p, v] = process.argv.slice(1); process.exit(require(p).version === v ? 0 : 1)' \
    "$tc/node_modules/$1/package.json" "$2" 2>/dev/null
}
command -v node >/dev/null 2>&1 || fail "needs Node.js (18 or later) and npm"
if [ ! -x "$jco" ] || ! installed @bytecodealliance/jco "$JCO_VERSION" \
   || ! installed @bytecodealliance/componentize-js "$COMPONENTIZE_JS_VERSION"; then
  echo "js.sh: installing jco $JCO_VERSION + componentize-js $COMPONENTIZE_JS_VERSION (npm) into $tc" >&2
  command -v npm >/dev/null 2>&1 || fail "needs npm"
  mkdir -p "$tc"
  npm install --silent --no-audit --no-fund --prefix "$tc" \
    "@bytecodealliance/jco@$JCO_VERSION" "@bytecodealliance/componentize-js@$COMPONENTIZE_JS_VERSION" >&2 \
    || fail "npm install of jco/componentize-js failed"
fi

# The entry: main.js or main.ts, or the directory's only .js/.ts file.
if [ -f "$dir/main.js" ]; then
  src=main.js
elif [ -f "$dir/main.ts" ]; then
  src=main.ts
else
  srcs=()
  for f in "$dir"/*.js "$dir"/*.ts; do
    case "$f" in *.d.ts) ;; *) [ -e "$f" ] && srcs+=("$f") ;; esac
  done
  [ "${#srcs[@]}" = 1 ] || fail "$dir needs main.js, main.ts or exactly one .js or .ts file"
  src="$(basename "${srcs[0]}")"
fi

# The module root QuickJS resolves imports in (read-only during the build):
#   entry.js                    exports the plugin as interface `plugin`
#   app/                        a copy of DIR
#   node_modules/wasmsched/     the SDK (bare import "wasmsched")
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
mkdir -p "$build/app" "$build/node_modules/wasmsched"
cp -R "$dir/." "$build/app/"
cp "$sdk/package.json" "$sdk/wasmsched.js" "$sdk/wasmsched.d.ts" "$build/node_modules/wasmsched/"
# TypeScript: type-checked against the SDK's types (strict) and compiled to
# JavaScript beside the sources, with the tsc that comes with jco.
if [ -n "$(find "$build/app" -name '*.ts' ! -name '*.d.ts' -print -quit)" ]; then
  tsc="$tc/node_modules/typescript/bin/tsc"
  [ -x "$tsc" ] || fail "no TypeScript compiler in $tc (expected with jco)"
  cat > "$build/app/tsconfig.json" <<'TS'
{
  "compilerOptions": {
    "target": "es2022",
    "module": "es2022",
    "moduleResolution": "bundler",
    "lib": ["es2022"],
    "types": [],
    "strict": true,
    "skipLibCheck": true,
    "noEmitOnError": true,
    "sourceMap": true
  },
  "include": ["**/*.ts"]
}
TS
  # tsc names files relative to the copy: FILE(LINE,COL) becomes
  # DIR/FILE:LINE:COL, as the plugin's author knows them.
  (cd "$build/app" && "$tsc" -p tsconfig.json --pretty false) >"$build/tsc.log" 2>&1 || {
    sed -E "s#^([^ (][^(]*)\(([0-9]+),([0-9]+)\): #$dir/\1:\2:\3: #" "$build/tsc.log" >&2
    fail "TypeScript errors in $dir (tsc, strict, against sdk/js/wasmsched.d.ts)"
  }
  src="${src%.ts}.js"
  language="TypeScript=tsc $("$tsc" --version | sed 's/^Version //')"
fi
cat > "$build/entry.js" <<JS
import definition from "./app/$src";
if (!definition || typeof definition.metadata !== "function") {
  throw new Error("$src: export default definePlugin({...}) (from \"wasmsched\")");
}
export const plugin = definition;
JS

# A failed componentize reports the bundler's errors in its own layout and
# errors of the module's evaluation (definePlugin's checks included) at
# lines of the bundle. Say what went wrong first, at the line of the
# plugin's own file: the bundler's error as FILE:LINE:COL: message; an
# evaluation error by evaluating the module again in Node (the host import
# stubbed; TypeScript mapped back through tsc's source maps). Anything else:
# componentize's log as it is.
report() {
  cat > "$build/diagnose.mjs" <<'DIAGNOSE'
import { readFileSync } from "node:fs";
import { register } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const [log, build, dir, entry] = process.argv.slice(2);
const say = (line) => process.stderr.write(line + "\n");
const mine = (path) => path.startsWith(build + "/app/") && !path.includes("/node_modules/");
const theirs = (path) => dir + path.slice((build + "/app").length);
const text = readFileSync(log, "utf8");

// The bundler's errors: [CODE] message, then the place: ╭─[ app/FILE:LINE:COL ].
const bundle = text.indexOf("Build failed with");
if (bundle >= 0) {
  let found = false;
  for (const m of text.slice(bundle).matchAll(/^\[([A-Z_]+)\] (.*)\n(?:.*\n){0,2}?\s*╭─\[ (.*?):(\d+):(\d+) \]/gm)) {
    const [, , message, file, line, col] = m;
    say(`${file.startsWith("app/") ? dir + file.slice(3) : file}:${line}:${col}: ${message}`);
    found = true;
  }
  process.exit(found ? 0 : 1);
}
if (!text.includes("Exception while evaluating top-level script")) process.exit(1);

// Evaluated again, in Node, the module throws where it threw in the build.
const stub = "export const log = () => {};";
register(
  "data:text/javascript," +
    encodeURIComponent(`export async function resolve(s, c, next) {
      return s.startsWith("wasmsched:plugin/")
        ? { url: "data:text/javascript," + encodeURIComponent(${JSON.stringify(stub)}), shortCircuit: true }
        : next(s, c);
    }`),
);
try {
  await import(pathToFileURL(entry).href);
} catch (e) {
  // Frames name a file:// URL, or a path when mapped by a source map.
  const frames = [...String(e?.stack ?? "").matchAll(/(?:\(|at )((?:file:\/\/)?\/[^\s()]+?):(\d+):(\d+)\)?$/gm)]
    .map(([, at, line, col]) => ({ path: at.startsWith("file:") ? fileURLToPath(at) : at, line: +line, col: +col }))
    .filter((f) => mine(f.path));
  const message = !(e instanceof Error) ? String(e) : e.message.startsWith("definePlugin:") ? e.message : `${e.name}: ${e.message}`;
  const at = frames[0];
  if (!at) {
    say(message);
    process.exit(0);
  }
  // An unknown key: the line that defines it, rather than the call.
  const key = /unknown key "([^"]+)"/.exec(message)?.[1];
  if (key) {
    const source = readFileSync(theirs(at.path), "utf8").split("\n");
    const quoted = key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const defines = new RegExp(`^\\s*(?:async\\s+|get\\s+|set\\s+)?\\*?["'\`]?${quoted}["'\`]?\\s*[(:,]`);
    const i = source.findIndex((l, n) => n + 1 >= at.line && defines.test(l));
    if (i >= 0) {
      at.line = i + 1;
      at.col = source[i].search(/\S/) + 1;
    }
  }
  say(`${theirs(at.path)}:${at.line}:${at.col}: ${message}`);
  process.exit(0);
}
process.exit(1);
DIAGNOSE
  node --enable-source-maps "$build/diagnose.mjs" "$build/log" "$build" "$dir" "$build/app/$src" >&2 \
    || cat "$build/log" >&2
}

backend="${WASMSCHED_JS_BACKEND:-starlingmonkey}"
cd "$build"
case "$backend" in
  quickjs)
    echo 'globalThis.__wasmsched_backend = "quickjs";' > "$build/backend.js"
    sed -i '1i import "./backend.js";' "$build/entry.js"
    "$jco" componentize entry.js --wit "$wit" --world-name scheduler-plugin \
      --backend quickjs --backend-qjs-disable-async --backend-qjs-stub-wasi \
      -o "$out" >"$build/log" 2>&1 || { report; fail "jco componentize failed for $dir"; }
    ;;
  starlingmonkey)
    # jco 1.35's bundled WASI shim no longer preopens `/`, so componentize
    # cannot read its inputs ("failed to get path metadata"): preopen it.
    : > "$build/preopen.mjs"
    i=0
    while IFS= read -r shim; do
      i=$((i + 1))
      echo "import { _setPreopens as p$i } from \"$shim\"; p$i({ \"/\": \"/\" });" >> "$build/preopen.mjs"
    done < <(find "$tc/node_modules" -path '*preview2-shim/dist/nodejs/filesystem.js')
    echo 'globalThis.__wasmsched_backend = "starlingmonkey";' > "$build/backend.js"
    sed -i '1i import "./backend.js";' "$build/entry.js"
    node --import "$build/preopen.mjs" "$(readlink -f "$jco")" componentize "$build/entry.js" \
      --wit "$wit" --world-name scheduler-plugin -d all --bundle \
      -o "$out" >"$build/log" 2>&1 || { report; fail "jco componentize failed for $dir"; }
    ;;
  *) fail "WASMSCHED_JS_BACKEND: starlingmonkey or quickjs, not $backend" ;;
esac
[ -s "$out" ] || { cat "$build/log" >&2; fail "jco componentize wrote no component for $dir"; }
[ -z "${WASMSCHED_LANGUAGE:-}" ] || echo "${language:-JavaScript=jco $JCO_VERSION}" > "$WASMSCHED_LANGUAGE"
