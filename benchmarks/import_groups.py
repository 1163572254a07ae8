#!/usr/bin/env python3
"""How far imports split a tree into groups that could be analysed apart (README "Memory").

    .venv/bin/python benchmarks/import_groups.py ROOT [ROOT ...]

Follows graphmend's rules for placing and resolving modules (include/graphmend/analysis.hpp):
a package is the outermost folder of an __init__.py chain, a folder without __init__.py is a
folder project with a namespace of its own, torch's own files are never what `torch...`
resolves to. Every import statement of every file (parsed with `ast`; files that do not parse
are left alone) joins the file to the files its dotted names and their prefixes resolve to,
in its own namespace and among the packages. Prints the files and bytes of the tree, then the
largest groups of files joined this way (files, bytes, share of the bytes, one file of it).
An approximation of the analysis, made to size the groups, not a part of graphmend.
"""
import ast, os, sys, sysconfig, collections
roots = sys.argv[1:]
if not roots:
    sys.exit(__doc__)
files = []
for r in roots:
    for d, ds, fs in os.walk(r):
        for f in fs:
            if f.endswith('.py'):
                p = os.path.join(d, f)
                if os.path.isfile(p) and not os.path.islink(p): files.append(p)
def place(p):
    d = os.path.dirname(p)
    if not os.path.exists(os.path.join(d, '__init__.py')):
        stem = os.path.splitext(os.path.basename(p))[0]
        return (d, True, os.path.basename(d) + '.' + stem)
    top = d
    while os.path.exists(os.path.join(os.path.dirname(top), '__init__.py')): top = os.path.dirname(top)
    rel = os.path.relpath(p, os.path.dirname(top))[:-3].replace(os.sep, '.')
    if rel.endswith('.__init__'): rel = rel[:-9]
    return (top, False, rel)
reg = {}
info = []
for i, p in enumerate(sorted(files)):
    proj, iso, mod = place(p)
    ns = proj if iso else ''
    if not iso and (mod == 'torch' or mod.startswith('torch.')): pass
    else: reg.setdefault((ns, mod), i)
    info.append((p, proj, iso, mod))
files = sorted(files)
parent = list(range(len(files)))
def find(x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]; x = parent[x]
    return x
def union(a, b):
    a, b = find(a), find(b)
    if a != b: parent[a] = b
sizes = [os.path.getsize(p) for p in files]
for i, (p, proj, iso, mod) in enumerate(info):
    try: tree = ast.parse(open(p, 'rb').read())
    except Exception: continue
    ns = proj if iso else ''
    pkg = mod if p.endswith('__init__.py') else mod.rpartition('.')[0]
    for n in ast.walk(tree):
        names = []
        if isinstance(n, ast.Import): names = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            if n.level:
                base = pkg.split('.')
                base = base[:len(base) - (n.level - 1)] if n.level > 1 else base
                m = '.'.join(base + ([n.module] if n.module else []))
            else: m = n.module or ''
            names = [m] + [m + '.' + a.name for a in n.names]
        for m in names:
            parts = m.split('.')
            for k in range(1, len(parts) + 1):
                c = '.'.join(parts[:k])
                for key in ((ns, c), ('', c)):
                    j = reg.get(key)
                    if j is not None: union(i, j)
comp = collections.defaultdict(lambda: [0, 0])
for i in range(len(files)):
    c = comp[find(i)]; c[0] += 1; c[1] += sizes[i]
tot = sum(sizes)
print('files', len(files), 'bytes', tot)
for r, (n, b) in sorted(comp.items(), key=lambda kv: -kv[1][1])[:8]:
    print(n, b, round(b / tot, 3), files[r])
