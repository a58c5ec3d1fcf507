#!/usr/bin/env bash
# Usage: .ci/find_python.sh 3.12
# Prints the path of a *working* python3.12 interpreter, or nothing. Always exits 0.
# Candidates are run, not just looked up: pyenv shims exist on PATH even when
# they fail ("pyenv: python3.12: command not found").
v="${1:?usage: find_python.sh VERSION}"

cands=("python$v")
if command -v pyenv >/dev/null 2>&1 && root="$(pyenv root 2>/dev/null)"; then
    cands+=("$root"/versions/"$v"*/bin/python"$v")
fi
cands+=(/root/.pyenv/versions/"$v"*/bin/python"$v" "/usr/bin/python$v" "/usr/local/bin/python$v")

for c in "${cands[@]}"; do
    # must run, and must really be version $v
    if "$c" -c "import sys; sys.exit('%d.%d' % sys.version_info[:2] != '$v')" >/dev/null 2>&1; then
        command -v "$c"
        exit 0
    fi
done
exit 0
