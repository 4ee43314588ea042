#!/usr/bin/env bash
# Builds a JavaScript plugin (plugins/sdk/js) into a component of world
# `scheduler-plugin` (QuickJS by default):
#
#   plugins/lang/js.sh DIR OUT      (normally run by plugins/build.sh)
#
# DIR: the plugin's directory: main.js or main.ts, or its only .js/.ts file,
# is the plugin module; it imports the SDK as "wasmsched" and does
# `export default definePlugin({...})`; relative imports of other files of
# DIR work (from TypeScript, import "./util.js" for util.ts). TypeScript is
# type-checked (strict) against sdk/js/wasmsched.d.ts and compiled first.
# Installs jco, componentize-js and componentize-qjs from npm into
# $HOME/.cache/wasmsched/toolchains/js when missing.
#
# Engine (WASMSCHED_JS_BACKEND): `quickjs` (the default) builds with
# componentize-qjs (--stub-wasi) on the non-async QuickJS runtime of
# componentize-qjs 0.5.0 (prebuilt/runtime-sync.wasm of that crate, on which
# 64-bit integers are exact BigInts; npm has only 0.4.5, whose runtime makes
# them Numbers), then rewrites the component with wasm-tools so that the
# host takes it (flatten.mjs below: one memory instead of three, borrowed
# handles dropped before the call returns). The runtime comes from the crate
# as cargo gets it (its registry cache, else static.crates.io), checked
# against the crates.io index's checksum, and is kept in the toolchain
# directory. WASMSCHED_QJS_RUNTIME=FILE builds on another non-async runtime
# module of componentize-qjs. `starlingmonkey` builds with jco componentize
# (componentize-js, StarlingMonkey) with `-d all` (no WASI import at all):
# ~13 MB components, ~1 ms per call.
set -euo pipefail
dir="$(cd "${1:?usage: js.sh DIR OUT}" && pwd)"
out="${2:?usage: js.sh DIR OUT}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
plugins="${WASMSCHED_PLUGINS:-$(cd "$(dirname "$0")/.." && pwd)}"
wit="$(cd "${WASMSCHED_WIT:-$plugins/../wit}" && pwd)"
sdk="$plugins/sdk/js"
JCO_VERSION=1.35.0
COMPONENTIZE_JS_VERSION=0.23.0
# The one jco 1.35 depends on: flatten.mjs below knows its components.
COMPONENTIZE_QJS_VERSION=0.4.5
# The crate whose QuickJS runtime the QuickJS backend builds on, and its
# sha256 ("cksum" of its line in the crates.io index,
# https://index.crates.io/co/mp/componentize-qjs): checked against the index
# when it is reachable, used as is when it is not.
QJS_RUNTIME_CRATE_VERSION=0.5.0
QJS_RUNTIME_CRATE_SHA256=28a1720b7d313fc84dc93b0edd7d8533d9b3e808ffcbdcf3112c602417ed9c8f
tc="${WASMSCHED_TOOLCHAINS:-$HOME/.cache/wasmsched/toolchains}/js"
jco="$tc/node_modules/.bin/jco"

fail() { echo "js.sh: $*" >&2; exit 1; }

installed() {
  node -e 'const [p, v] = process.argv.slice(1); process.exit(require(p).version === v ? 0 : 1)' \
    "$tc/node_modules/$1/package.json" "$2" 2>/dev/null
}
command -v node >/dev/null 2>&1 || fail "needs Node.js (18 or later) and npm"
if [ ! -x "$jco" ] || ! installed @bytecodealliance/jco "$JCO_VERSION" \
   || ! installed @bytecodealliance/componentize-js "$COMPONENTIZE_JS_VERSION" \
   || ! installed componentize-qjs "$COMPONENTIZE_QJS_VERSION"; then
  echo "js.sh: installing jco $JCO_VERSION + componentize-js $COMPONENTIZE_JS_VERSION + componentize-qjs $COMPONENTIZE_QJS_VERSION (npm) into $tc" >&2
  command -v npm >/dev/null 2>&1 || fail "needs npm"
  mkdir -p "$tc"
  npm install --silent --no-audit --no-fund --prefix "$tc" \
    "@bytecodealliance/jco@$JCO_VERSION" "@bytecodealliance/componentize-js@$COMPONENTIZE_JS_VERSION" \
    "componentize-qjs@$COMPONENTIZE_QJS_VERSION" >&2 \
    || fail "npm install of jco/componentize-js/componentize-qjs failed"
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

# A failed componentize reports the bundler's errors in its own layout
# (StarlingMonkey), a module QuickJS cannot parse at a path of the build
# directory, and errors of the module's evaluation (definePlugin's checks
# included) at lines of the bundle or of the compiled JavaScript. Say what
# went wrong first, at the line of the plugin's own file: the bundler's or
# QuickJS's parse error as FILE:LINE:COL: message; an evaluation error by
# evaluating the module again in Node (the host import stubbed; TypeScript
# mapped back through tsc's source maps). Anything else: componentize's log
# as it is.
report() {
  cat > "$build/diagnose.mjs" <<'DIAGNOSE'
import { existsSync, readFileSync } from "node:fs";
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
// QuickJS: a module of the plugin's that does not parse, at its line (the
// build directory is QuickJS's /). Not a .js that tsc wrote: Node says more.
const parse = /Failed to declare JavaScript module: (.*)\n\s+at (\/app\/[^\s()]+?):(\d+):(\d+)/.exec(text);
if (parse && mine(build + parse[2]) && existsSync(theirs(build + parse[2]))) {
  const [, message, path, line, col] = parse;
  say(`${theirs(build + path)}:${line}:${col}: ${message.replace(/^Error: (?=Unexpected|unexpected|expecting|invalid)/, "SyntaxError: ")}`);
  process.exit(0);
}
const evaluating = ["Exception while evaluating top-level script", "Failed to evaluate user JavaScript module"];
if (!evaluating.some((m) => text.includes(m))) process.exit(1);

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
    say(message.split(build + "/app").join(dir));
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

# The QuickJS runtime module of componentize-qjs $QJS_RUNTIME_CRATE_VERSION
# (the crate's prebuilt/runtime-sync.wasm) into $runtime: extracted once
# into the toolchain directory from the crate, the one in cargo's registry
# cache if it is there, else downloaded as cargo would; the crate checked
# against the crates.io index's sha256 first.
qjs_runtime() {
  local v="$QJS_RUNTIME_CRATE_VERSION" keep="$tc/componentize-qjs-$QJS_RUNTIME_CRATE_VERSION"
  runtime="$keep/runtime-sync.wasm"
  [ -s "$runtime" ] && return 0
  local url="https://static.crates.io/crates/componentize-qjs/$v/download"
  local index="https://index.crates.io/co/mp/componentize-qjs"
  local want="$QJS_RUNTIME_CRATE_SHA256" listed crate="" c
  sha256() { node -e 'process.stdout.write(require("crypto").createHash("sha256").update(require("fs").readFileSync(process.argv[1])).digest("hex"))' "$1"; }
  # get URL SECONDS: the body on stdout (curl, else Node's fetch).
  get() {
    if command -v curl >/dev/null 2>&1; then
      curl -fsSL --retry 2 --max-time "$2" "$1"
    else
      node --input-type=module -e '
        const r = await fetch(process.argv[1], { signal: AbortSignal.timeout(process.argv[2] * 1000) });
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
        process.stdout.write(Buffer.from(await r.arrayBuffer()));' "$1" "$2"
    fi
  }
  if get "$index" 30 > "$build/index" 2>/dev/null; then
    listed="$(node -e '
      const [file, v] = process.argv.slice(1);
      for (const l of require("fs").readFileSync(file, "utf8").split("\n")) {
        if (!l.trim()) continue;
        const e = JSON.parse(l);
        if (e.vers === v) process.stdout.write(e.cksum);
      }' "$build/index" "$v")" || fail "cannot read the crates.io index ($index)"
    [ -n "$listed" ] || fail "the crates.io index ($index) has no componentize-qjs $v"
    [ "$listed" = "$want" ] || fail "the crates.io index ($index) gives componentize-qjs $v the sha256 $listed, not $want as js.sh expects"
  else
    echo "js.sh: cannot reach the crates.io index ($index): checking componentize-qjs $v against the sha256 in js.sh" >&2
  fi
  for c in "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"componentize-qjs-$v.crate"; do
    if [ -f "$c" ] && [ "$(sha256 "$c")" = "$want" ]; then crate="$c"; break; fi
  done
  if [ -z "$crate" ]; then
    echo "js.sh: downloading the QuickJS runtime of componentize-qjs $v (crate, $url)" >&2
    crate="$build/componentize-qjs-$v.crate"
    get "$url" 300 > "$crate" \
      || fail "cannot download componentize-qjs $v (the QuickJS runtime) from $url; or build with WASMSCHED_QJS_RUNTIME=FILE (its prebuilt/runtime-sync.wasm) or WASMSCHED_JS_BACKEND=starlingmonkey"
    c="$(sha256 "$crate")"
    [ "$c" = "$want" ] || fail "$url: sha256 $c, not the expected $want"
  fi
  mkdir -p "$keep"
  local member="componentize-qjs-$v/prebuilt/runtime-sync.wasm"
  tar -xzf "$crate" -O "$member" > "$build/runtime-sync.wasm" \
    || fail "no $member in $crate"
  # The crate lists the runtime's own sha256 beside it.
  c="$(tar -xzf "$crate" -O "$member.sha256" | cut -d' ' -f1)"
  [ "$(sha256 "$build/runtime-sync.wasm")" = "$c" ] || fail "$member in $crate does not match its .sha256"
  mv -f "$build/runtime-sync.wasm" "$runtime.tmp.$$"
  mv -f "$runtime.tmp.$$" "$runtime"
}

backend="${WASMSCHED_JS_BACKEND:-quickjs}"
cd "$build"
case "$backend" in
  quickjs)
    command -v wasm-tools >/dev/null 2>&1 || fail "the QuickJS backend needs wasm-tools (plugins/build.sh installs it)"
    echo 'globalThis.__wasmsched_backend = "quickjs";' > "$build/backend.js"
    sed -i '1i import "./backend.js";' "$build/entry.js"
    if [ -n "${WASMSCHED_QJS_RUNTIME:-}" ]; then
      runtime="$(cd "$(dirname "$WASMSCHED_QJS_RUNTIME")" && pwd)/$(basename "$WASMSCHED_QJS_RUNTIME")"
      [ -f "$runtime" ] || fail "WASMSCHED_QJS_RUNTIME: no file $WASMSCHED_QJS_RUNTIME"
      runtime_version="$(basename "$runtime")"
    else
      qjs_runtime
      runtime_version="$QJS_RUNTIME_CRATE_VERSION"
    fi
    # jco passes no runtime: componentize-qjs itself, as jco calls it.
    node --input-type=module -e '
      import { readFileSync, writeFileSync } from "node:fs";
      import { createRequire } from "node:module";
      import { resolve } from "node:path";
      const [tc, wit, out, runtime] = process.argv.slice(1);
      const { componentize } = createRequire(tc + "/node_modules/")("componentize-qjs");
      const r = await componentize({ witPath: wit, jsSource: readFileSync("entry.js", "utf8"), jsPath: resolve("entry.js"),
        world: "scheduler-plugin", stubWasi: true, runtime });
      writeFileSync(out, r.component);
    ' "$tc" "$wit" "$build/stubbed.wasm" "$runtime" >"$build/log" 2>&1 \
      || { report; fail "componentize-qjs failed for $dir"; }
    cat > "$build/flatten.mjs" <<'FLATTEN'
// node flatten.mjs IN.wat OUT.wat  (IN: `wasm-tools print` of what
// componentize-qjs built with stubbed WASI)
//
// componentize-qjs builds the plugin as the QuickJS component wrapped in
// two others: one that stubs its WASI imports and one that stubs its
// build-time module loader, each with a memory of its own. Calls between
// them need adapters that use two memories, which the host refuses
// (multi-memory is off). Keep the QuickJS component alone, its WASI and
// module-loader functions replaced by core functions that trap as the stubs
// did: one memory, and it imports only the plugin world.
//
// And componentize-qjs drops the `pod` and `nodes` it was lent only in the
// export's post-return, after the call has returned, which the component
// model forbids ("borrow handles still remain at the end of the call"):
// drop them when the export returns instead, and make the runtime's own
// later drops do nothing.
import { readFileSync, writeFileSync } from "node:fs";

const [src, dst] = process.argv.slice(2);
const fail = (m) => {
  process.stderr.write(`flatten: ${m}\n`);
  process.exit(1);
};
const lines = readFileSync(src, "utf8").split("\n");

// The QuickJS component: the one that holds the runtime's core module.
const runtimeAt = lines.findIndex((l) => /^\s*\(core module \$componentize_qjs_runtime/.test(l));
if (runtimeAt < 0) fail("no QuickJS runtime module in the component");
const indent = lines[runtimeAt].search(/\S/) - 2;
const pad = " ".repeat(indent);
let start = runtimeAt;
while (start >= 0 && !lines[start].startsWith(pad + "(component")) start--;
let end = runtimeAt;
while (end < lines.length && lines[end] !== pad + ")") end++;
if (start < 0 || end >= lines.length) fail("cannot find the QuickJS component");

// Its items, at 2 spaces: each starts a block of lines.
const blocks = [];
for (const l of lines.slice(start + 1, end)) {
  const line = l.slice(indent);
  if (line.startsWith("  (")) blocks.push([line]);
  else blocks[blocks.length - 1].push(line);
}

const NAME = String.raw`(\$(?:"[^"]*"|[^\s()]+))`;
const stubbed = (iface) => /^"?(wasi:|local:init\/)/.test(iface);
const removedFuncs = new Set(); // component funcs aliased from stubbed imports
const removedTypes = new Set(); // resource types aliased from stubbed imports
let out = [];
const replaced = []; // [index in out, core func]
for (const b of blocks) {
  const head = b[0];
  let m;
  // An instance type of a stubbed import: a placeholder keeps the type indices.
  if ((m = new RegExp(String.raw`^  \(type ${NAME} \(;(\d+);\)$`).exec(head)) && /^\$"?ty-(wasi:|local:init\/)/.test(m[1])) {
    out.push([`  (type ${m[1]} (;${m[2]};) (tuple u8))`]);
    continue;
  }
  if ((m = /^  \(import "([^"]+)" \(instance/.exec(head)) && stubbed(m[1])) continue;
  m = new RegExp(String.raw`^  \(alias export \$(\S+) "[^"]+" \((type|func) ${NAME} (?:\(@name "[^"]*"\) )?\(;(\d+);\)\)\)$`).exec(head);
  if (m && stubbed(m[1])) {
    if (m[2] === "type") {
      removedTypes.add(m[3]);
      out.push([`  (type ${m[3]} (;${m[4]};) (tuple u8))`]);
    } else {
      removedFuncs.add(m[3]);
    }
    continue;
  }
  m = new RegExp(String.raw`^  \(core func ${NAME} .*\(canon (?:lower \(func ${NAME}\)|resource\.drop ${NAME}\))`).exec(head);
  if (m && (removedFuncs.has(m[2]) || removedTypes.has(m[3]))) {
    replaced.push([out.length, m[1]]);
    out.push(null);
    continue;
  }
  out.push(b);
}
if (replaced.length === 0) fail("no WASI or module-loader import to replace");

// The core signature of each replaced function: how the module instantiated
// with the core instance that exports it imports it.
const exportsOf = new Map(); // core func -> [[core instance, export name]]
const withsOf = new Map(); // core instance -> [[module, import module name]]
const modules = new Map();
for (const b of out) {
  if (!b) continue;
  let m;
  if ((m = new RegExp(String.raw`^  \(core instance ${NAME} (?:\(@name "[^"]*"\) )?\(;\d+;\)$`).exec(b[0]))) {
    for (const l of b.slice(1)) {
      const e = new RegExp(String.raw`^    \(export "([^"]+)" \(func ${NAME}\)\)$`).exec(l);
      if (e) (exportsOf.get(e[2]) ?? exportsOf.set(e[2], []).get(e[2])).push([m[1], e[1]]);
    }
  } else if ((m = new RegExp(String.raw`^  \(core instance ${NAME} .*\(instantiate ${NAME}$`).exec(b[0]))) {
    for (const l of b.slice(1)) {
      const w = new RegExp(String.raw`^\s+\(with "([^"]+)" \(instance ${NAME}\)\)$`).exec(l);
      if (w) (withsOf.get(w[2]) ?? withsOf.set(w[2], []).get(w[2])).push([m[2], w[1]]);
    }
  } else if ((m = new RegExp(String.raw`^  \(core module ${NAME} `).exec(b[0]))) {
    modules.set(m[1], b);
  }
}
const importsOf = new Map();
function signature(module, mod, field) {
  if (!importsOf.has(module)) {
    const found = new Map();
    const re = new RegExp(String.raw`^    \(import "([^"]+)" "([^"]+)" \(func (?:${NAME} )?\(;\d+;\) \(type \d+\)(.*)\)\)$`);
    for (const l of modules.get(module) ?? []) {
      const m = re.exec(l);
      if (m) found.set(`${m[1]}\0${m[2]}`, m[4].trim());
    }
    importsOf.set(module, found);
  }
  return importsOf.get(module).get(`${mod}\0${field}`);
}
const traps = [];
for (const [at, func] of replaced) {
  const sigs = new Set();
  for (const [instance, field] of exportsOf.get(func) ?? []) {
    for (const [module, mod] of withsOf.get(instance) ?? []) sigs.add(signature(module, mod, field));
  }
  if (sigs.size !== 1 || sigs.has(undefined)) fail(`cannot tell the core type of ${func}`);
  out[at] = [`  (alias core export $wasmsched-traps "t${traps.length}" (core func ${func}))`];
  traps.push([...sigs][0]);
}
const first = Math.min(...replaced.map(([at]) => at));
out.splice(first, 0, [
  "  (core module $wasmsched-trap-module",
  ...traps.map((sig, k) => `    (func (export "t${k}") ${sig} unreachable)`),
  "  )",
  "  (core instance $wasmsched-traps (instantiate $wasmsched-trap-module))",
]);

// Borrowed handles: the exports that receive them, their core arity, the
// resources they borrow (as params 0 and 1) and whether they return a
// value (a pointer to it).
const PLUGIN = "wasmsched:plugin/plugin@";
const BORROWS = {
  "pre-filter": [1, ["pod"], true],
  filter: [2, ["pod", "nodes"], true],
  "pre-score": [2, ["pod", "nodes"], true],
  score: [2, ["pod", "nodes"], true],
  "normalize-score": [4, ["pod"], true], // the pod, then `scores` as tag, pointer, length
  "post-filter": [4, ["pod", "nodes"], true], // then `statuses` as pointer, length
  reserve: [2, ["pod", "nodes"], true],
  unreserve: [3, ["pod"], false], // the pod, then `node` as pointer, length
  permit: [2, ["pod", "nodes"], true],
  "pre-bind": [3, ["pod"], true],
  "post-bind": [3, ["pod"], false],
};
const lifts = [];
for (const [i, b] of out.entries()) {
  const m = b && new RegExp(String.raw`^  \(func ${NAME} .*\(canon lift \(core func (\$${PLUGIN}[0-9.]+#(${Object.keys(BORROWS).join("|")}))\)`).exec(b[0]);
  if (m) lifts.push([i, m[2], m[3]]);
}
const dropType = {};
for (const [i, b] of out.entries()) {
  const m = b && new RegExp(String.raw`^  \(core func ${NAME} .*\(canon resource\.drop ${NAME}\)\)$`).exec(b[0]);
  const r = m && /(?:^\$|[ "])(pod|nodes)"?$/.exec(m[2]);
  if (r) {
    dropType[r[1]] = m[2];
    out[i] = [`  (alias core export $wasmsched-noop "drop" (core func ${m[1]}))`];
  }
}
if (lifts.length === 0 || !dropType.pod || !dropType.nodes) fail("cannot find the plugin's exports or the drops of pod and nodes");
const params = (n) => Array(n).fill("i32").join(" ");
const wrap = ["  (core module $wasmsched-borrows"];
const result = (f) => (BORROWS[f][2] ? " (result i32)" : "");
for (const [, , f] of lifts) wrap.push(`    (import "x" "${f}" (func $x-${f} (param ${params(BORROWS[f][0])})${result(f)}))`);
wrap.push('    (import "d" "pod" (func $d-pod (param i32)))', '    (import "d" "nodes" (func $d-nodes (param i32)))');
for (const [, , f] of lifts) {
  const [n, rs] = BORROWS[f];
  const args = Array.from({ length: n }, (_, k) => `local.get ${k}`).join(" ");
  const drops = rs.map((r, k) => `local.get ${k} call $d-${r}`).join(" ");
  wrap.push(`    (func (export "${f}") (param ${params(n)})${result(f)} ${args} call $x-${f} ${drops})`);
}
wrap.push("  )");
// The exports themselves, aliased again here (theirs come between the lifts).
for (const [, core, f] of lifts) {
  const alias = out.find((b) => b && b[0].startsWith("  (alias core export ") && b[0].includes(`(core func ${core} (;`));
  const m = alias && new RegExp(String.raw`^  \(alias core export ${NAME} ("[^"]+") `).exec(alias[0]);
  if (!m) fail(`cannot find where ${core} comes from`);
  wrap.push(`  (alias core export ${m[1]} ${m[2]} (core func $wasmsched-x-${f}))`);
}
wrap.push("  (core instance $wasmsched-borrow-x");
for (const [, , f] of lifts) wrap.push(`    (export "${f}" (func $wasmsched-x-${f}))`);
wrap.push("  )");
wrap.push(`  (core func $wasmsched-drop-pod (canon resource.drop ${dropType.pod}))`);
wrap.push(`  (core func $wasmsched-drop-nodes (canon resource.drop ${dropType.nodes}))`);
wrap.push('  (core instance $wasmsched-borrow-d (export "pod" (func $wasmsched-drop-pod)) (export "nodes" (func $wasmsched-drop-nodes)))');
wrap.push('  (core instance $wasmsched-borrowing (instantiate $wasmsched-borrows (with "x" (instance $wasmsched-borrow-x)) (with "d" (instance $wasmsched-borrow-d))))');
for (const [, , f] of lifts) wrap.push(`  (alias core export $wasmsched-borrowing "${f}" (core func $wasmsched-${f}))`);
for (const [i, core, f] of lifts) out[i] = [out[i][0].replace(`(canon lift (core func ${core})`, `(canon lift (core func $wasmsched-${f})`), ...out[i].slice(1)];
// Before the first lift (after the instance it aliases from).
out.splice(lifts[0][0], 0, wrap);
const noop = out.findIndex((b) => b?.[0].startsWith("  (alias core export $wasmsched-noop "));
out.splice(noop, 0, [
  '  (core module $wasmsched-noop-module (func (export "drop") (param i32)))',
  "  (core instance $wasmsched-noop (instantiate $wasmsched-noop-module))",
]);

// Wizer's initializer is of no use once snapshotted: not exported.
out = out.filter((b) => !/^  \(export .*"init" \(func \$init\)\)$/.test(b[0]));
writeFileSync(dst, "(component\n" + out.map((b) => b.join("\n")).join("\n") + "\n)\n");
FLATTEN
    wasm-tools print "$build/stubbed.wasm" -o "$build/stubbed.wat"
    node "$build/flatten.mjs" "$build/stubbed.wat" "$build/flat.wat" 2>"$build/flatten.log" \
      || { cat "$build/flatten.log" >&2; fail "cannot rewrite the QuickJS component of $dir (componentize-qjs changed?)"; }
    wasm-tools parse "$build/flat.wat" -o "$out"
    qjs_version="$(node -p 'require(process.argv[1]).version' "$tc/node_modules/componentize-qjs/package.json" 2>/dev/null || echo unknown)"
    language="${language:-JavaScript=componentize-qjs $qjs_version (runtime $runtime_version)}"
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
