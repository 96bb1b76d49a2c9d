#!/usr/bin/env bash
# Planted bugs, a test of the tests (issue 32, item 12). Each tests/planted/*.patch plants
# one bug in the library (crates/outbox-core, crates/outbox-idb); its first line says what it
# breaks (`breaks:`), its second which e2e specs must catch it (`specs:`), and an optional
# third which Rust tests (`cargo:`, arguments of `cargo test`). For each patch chosen, this
# script copies the work tree, applies the patch, builds the package there
# (scripts/build.sh), runs the soak at its CI size (without its Workbox peer), the patch's
# specs and its Rust tests, and fails if a planted bug survives them all — or if a patch no
# longer applies or builds. A patch with a `known-gap:` line is a bug no test catches yet
# (the line says why): it is reported as such, left out of --rotate, and fails only --strict.
#
#   scripts/planted.sh --all            # every patch (about 5 minutes each on 2 cores)
#   scripts/planted.sh --rotate 2       # CI: 2 patches, chosen by the day (all in 5 days)
#   scripts/planted.sh 04-successor     # the patches whose names start so
#   scripts/planted.sh --check          # only: every patch still applies (seconds)
#   options: --ops N (soak size, default 1000), --seed S (soak seed, default: drawn), --strict
#            (a known gap that survives fails too),
#            --no-specs / --no-soak (one side only; a bug then survives if that side misses it)
# Prints one table row per patch and a summary; test-results/planted/<patch>.log keeps each
# run's output. The copy and its build live in /tmp/tab-outbox-planted-<hash of this tree>.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PATH="$HOME/.cargo/bin:$PATH"
mode=names; names=(); ops=1000; seed=""; rotate=0; soak=1; specs=1; strict=0
while [ $# -gt 0 ]; do
  case "$1" in
    --all) mode=all; shift ;;
    --rotate) mode=rotate; rotate="$2"; shift 2 ;;
    --check) mode=check; shift ;;
    --ops) ops="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --no-specs) specs=0; shift ;;
    --no-soak) soak=0; shift ;;
    --strict) strict=1; shift ;;
    -h|--help) sed -n '2,/^set -e/{/^set -e/d;p}' "$0"; exit 0 ;;
    -*) echo "planted.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
all=(tests/planted/*.patch)

# Every patch must still apply: a planted bug that silently stopped being planted tests nothing.
broken=0
for p in "${all[@]}"; do
  if ! git apply --check "$p" 2>/dev/null; then
    echo "planted: $p no longer applies to this tree: refresh it (keep it minimal)" >&2
    broken=1
  fi
done
if [ "$mode" = check ]; then
  [ "$broken" = 0 ] && echo "planted: all ${#all[@]} patches apply"
  exit "$broken"
fi
[ "$broken" = 0 ] || exit 1

chosen=()
case "$mode" in
  all) chosen=("${all[@]}") ;;
  rotate)
    # The day picks where to start: consecutive days cover every patch (known gaps aside).
    pool=(); for p in "${all[@]}"; do grep -q '^known-gap: ' "$p" || pool+=("$p"); done
    n=${#pool[@]}; day=$(( $(date +%s) / 86400 ))
    for ((i = 0; i < rotate && i < n; i++)); do chosen+=("${pool[$(( (day * rotate + i) % n ))]}"); done ;;
  names)
    [ ${#names[@]} -gt 0 ] || { echo "planted.sh: name patches, or --all, --rotate N, --check (see --help)" >&2; exit 2; }
    for n in "${names[@]}"; do
      found=0
      for p in "${all[@]}"; do case "$(basename "$p")" in "$n"*) chosen+=("$p"); found=1 ;; esac; done
      [ "$found" = 1 ] || { echo "planted.sh: no patch named $n*" >&2; exit 2; }
    done ;;
esac

[ -x target/release/outbox-gate ] || { echo "planted.sh: build the gate first (scripts/build.sh --gate)" >&2; exit 2; }
work="/tmp/tab-outbox-planted-$(printf %s "$root" | sha256sum | cut -c1-8)"
# One target folder for every copy (the copy is always at the same path): each patch
# rebuilds only the workspace's crates.
export CARGO_TARGET_DIR="$work-target"
mkdir -p test-results/planted "$CARGO_TARGET_DIR"
# Ports of their own, so that a run beside the e2e suite or the soak does not collide.
export GATE_PORT="${PLANTED_PORT:-8891}"
survivors=0
rows=()
for p in "${chosen[@]}"; do
  name=$(basename "$p" .patch)
  what=$(sed -n 's/^breaks: //p' "$p" | head -1)
  spec_files=$(sed -n 's/^specs: //p' "$p" | head -1)
  cargo_args=$(sed -n 's/^cargo: //p' "$p" | head -1)
  log="$root/test-results/planted/$name.log"
  started=$(date +%s)
  echo "==> planted $name: $what"
  rm -rf "$work"; mkdir -p "$work"
  # The work tree as it is (tracked and new files, not ignored ones), then the bug. Every
  # file dated now (`-m`): with the tree's own dates, a source the previous patch changed
  # came back older than the build made from it, and cargo kept that build: the patch ran
  # with the previous patch's bug (a build-only patch ran with all of it).
  git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -m -xf - -C "$work"
  ln -s "$root/node_modules" "$work/node_modules"
  ln -s "$CARGO_TARGET_DIR" "$work/target"
  (cd "$work" && git apply "$root/$p")
  # The package from the planted library; the gate is the reference one, built from this tree.
  mkdir -p "$CARGO_TARGET_DIR/release"
  ln -sf "$root/target/release/outbox-gate" "$CARGO_TARGET_DIR/release/outbox-gate"
  if ! (cd "$work" && SKIP_SIZE_BUDGET=1 scripts/build.sh) >"$log" 2>&1; then
    echo "planted: $name does not build (see $log)" >&2
    exit 1
  fi
  soak_res="not run"; spec_res="not run"; cargo_res=""
  # A gate that could not start would make every run fail, and every bug look caught.
  if (exec 3<>"/dev/tcp/127.0.0.1/$GATE_PORT") 2>/dev/null; then
    echo "planted: port $GATE_PORT is taken: stop what listens there, or set PLANTED_PORT" >&2
    exit 1
  fi
  if [ "$soak" = 1 ]; then
    s=${seed:-$(( (RANDOM << 15) | RANDOM ))}
    if (cd "$work" && SOAK_TIMEOUT_MS=900000 scripts/soak.sh --no-build --ops "$ops" --seed "$s" --peer-ops 0) >>"$log" 2>&1; then
      soak_res="missed (seed $s)"
    else
      why=$(grep -aE '^\s+(Error: )?[a-zA-Z ,()'"'"'-]+: *$|Error: ' "$log" | grep -v '^\s*at ' | head -1 | sed 's/^ *//' | cut -c1-90)
      soak_res="caught (seed $s${why:+: $why})"
    fi
  fi
  if [ "$specs" = 1 ]; then
    files=(); for f in $spec_files; do files+=("tests/e2e/$f"); done
    if (cd "$work" && npx playwright test "${files[@]}") >"$log.specs" 2>&1; then
      spec_res="missed"
    else
      failed=$(grep -aE '^\s+[0-9]+\) ' "$log.specs" | sed -E 's/^\s+[0-9]+\) \[[^]]*\] › //; s/^\s+[0-9]+\) //' | sort -u | head -2 | tr '\n' ';' | cut -c1-120)
      spec_res="caught (${failed:-see log})"
    fi
  fi
  if [ -f "$log.specs" ]; then cat "$log.specs" >>"$log"; rm -f "$log.specs"; fi
  if [ -n "$cargo_args" ] && [ "$specs" = 1 ]; then
    # shellcheck disable=SC2086 # the header's arguments, split as written
    if (cd "$work" && cargo test $cargo_args) >>"$log" 2>&1; then
      cargo_res="; cargo test $cargo_args: missed"
    else
      failed=$(grep -aE '^test .* FAILED$' "$log" | sed -E 's/^test (.*) \.\.\. FAILED$/\1/' | sort -u | head -2 | tr '\n' ';')
      cargo_res="; cargo test $cargo_args: caught (${failed:-see log})"
    fi
  fi
  if grep -aq "config.webServer was not able to start" "$log"; then
    echo "planted: the gate did not start for $name (see $log): no verdict" >&2
    exit 1
  fi
  verdict=caught
  if [[ "$soak_res" != caught* && "$spec_res" != caught* && "$cargo_res" != *caught* ]]; then
    gap=$(sed -n 's/^known-gap: //p' "$p" | head -1)
    if [ -n "$gap" ] && [ "$strict" = 0 ]; then verdict="SURVIVED, a known gap ($gap)"
    else verdict=SURVIVED; survivors=$((survivors + 1)); fi
  fi
  rows+=("| $name | $verdict | soak: $soak_res | specs ($spec_files): $spec_res$cargo_res | $(( $(date +%s) - started )) s |")
  echo "${rows[-1]}"
done
rm -rf "$work"
echo
echo "planted bugs: ${#chosen[@]} run, $survivors survived"
printf '%s\n' "${rows[@]}"
[ "$survivors" = 0 ]
