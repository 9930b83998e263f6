#!/usr/bin/env python3
"""Makes a large benchmark trace from a real one by concatenation.

Copies the events of TRACE N times; each copy is shifted in time to start right after the
previous one, and correlation / External id / flow ids are offset so copies stay distinct.

  scripts/scale-trace.py TRACE OUT.json TARGET_MB
"""
import gzip, json, sys

def main(src, out, target_mb):
    opener = gzip.open if src.endswith('.gz') else open
    with opener(src, 'rt') as f:
        doc = json.load(f)
    events = doc.pop('traceEvents')
    timed = [e for e in events if 'ts' in e and e.get('ph') != 'M']
    start = min(e['ts'] for e in timed)
    span = max(e['ts'] + e.get('dur', 0) for e in timed) - start + 1
    one = sum(len(json.dumps(e)) + 2 for e in events)
    copies = max(1, int(target_mb * 1e6 / one))
    with open(out, 'w') as w:
        w.write('{')
        for k, v in doc.items():
            w.write(json.dumps(k) + ': ' + json.dumps(v) + ',\n')
        w.write('"traceEvents": [\n')
        first = True
        for c in range(copies):
            shift, idshift = c * span, c * 10_000_000
            for e in events:
                if c and e.get('ph') == 'M':
                    continue
                e2 = dict(e)
                if 'ts' in e2:
                    e2['ts'] = e2['ts'] + shift
                if 'id' in e2 and isinstance(e2['id'], int):
                    e2['id'] += idshift
                args = e2.get('args')
                if isinstance(args, dict):
                    args = dict(args)
                    for key in ('correlation', 'External id'):
                        if isinstance(args.get(key), int):
                            args[key] += idshift
                    e2['args'] = args
                w.write(('' if first else ',\n') + json.dumps(e2))
                first = False
        w.write('\n]}\n')
    print(f'{out}: {copies} copies of {src}')

if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
