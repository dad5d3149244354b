#!/usr/bin/env bash
# Lines and files per crate (src/, tests inside src counted), and the ten longest
# functions (from a `fn` line to the closing brace at its indentation).
#   bash bench/code-size.sh [CHECKOUT]     # default: this one
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
exec python3 - "$root" <<'EOF'
import os, re, sys
root = sys.argv[1]
crates = sorted(os.listdir(os.path.join(root, 'crates')))
tot_f = tot_l = 0
print(f"{'crate':22} {'files':>5} {'lines':>6}")
funcs = []
for c in crates:
    src = os.path.join(root, 'crates', c, 'src')
    nf = nl = 0
    for d, _, fs in os.walk(src):
        for f in fs:
            if not f.endswith('.rs'): continue
            p = os.path.join(d, f)
            lines = open(p, encoding='utf-8', errors='replace').read().split('\n')
            nf += 1; nl += len(lines)
            # functions: a line with 'fn name(' at indentation, to its closing brace at the same indentation
            for i, l in enumerate(lines):
                m = re.match(r'^(\s*)(pub(\([^)]*\))? )?(const )?(async )?(unsafe )?fn (\w+)', l)
                if not m: continue
                ind = m.group(1)
                if l.rstrip().endswith(';'): continue
                for j in range(i, min(len(lines), i + 2000)):
                    if lines[j] == ind + '}' or (j == i and l.rstrip().endswith('}')):
                        funcs.append((j - i + 1, f"{os.path.relpath(p, root)}:{i+1}", m.group(7)))
                        break
    tot_f += nf; tot_l += nl
    print(f"{c:22} {nf:5} {nl:6}")
print(f"{'total':22} {tot_f:5} {tot_l:6}")
print("ten longest functions:")
for n, where, name in sorted(funcs, reverse=True)[:10]:
    print(f"  {n:4} {name} ({where})")
EOF
