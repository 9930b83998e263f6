#!/usr/bin/env python3
"""Makes a large benchmark trace from a real one by concatenation.

Copies the events of TRACE N times; each copy is shifted in time to start right after the
previous one, and its ids are shifted past the previous copy's, each kind by its own span:
correlation ids with the launch flows' ids (a launch flow's id is its correlation id), the other
flows' ids, External ids. The ids stay distinct and as dense as in one long capture, where a
profiler's counters number them.

  scripts/scale-trace.py TRACE OUT.json TARGET_MB
"""
import gzip, json, sys

LAUNCH_FLOWS = ('ac2g', 'async_cpu_to_gpu')

def id_span(events, arg_keys, top_keys):
    """max - min + 1 over the integer ids under these args and top-level keys (1 if none)."""
    ids = [e['args'][k] for e in events for k in arg_keys
           if isinstance(e.get('args'), dict) and isinstance(e['args'].get(k), int)]
    ids += [e[k] for e in events for k in top_keys if isinstance(e.get(k), int)]
    return max(ids) - min(ids) + 1 if ids else 1

def main(src, out, target_mb):
    opener = gzip.open if src.endswith('.gz') else open
    with opener(src, 'rt') as f:
        doc = json.load(f)
    events = doc.pop('traceEvents')
    timed = [e for e in events if 'ts' in e and e.get('ph') != 'M']
    start = min(e['ts'] for e in timed)
    span = max(e['ts'] + e.get('dur', 0) for e in timed) - start + 1
    one = sum(len(json.dumps(e)) + 2 for e in events)
    launch_flows = [e for e in events if e.get('cat') in LAUNCH_FLOWS]
    other_flows = [e for e in events if 'id' in e and e.get('cat') not in LAUNCH_FLOWS]
    corr_span = max(id_span(events, ('correlation',), ()), id_span(launch_flows, (), ('id',)))
    flow_span = id_span(other_flows, (), ('id',))
    ext_span = id_span(events, ('External id',), ())
    copies = max(1, int(target_mb * 1e6 / one))
    with open(out, 'w') as w:
        w.write('{')
        for k, v in doc.items():
            w.write(json.dumps(k) + ': ' + json.dumps(v) + ',\n')
        w.write('"traceEvents": [\n')
        first = True
        for c in range(copies):
            shift = c * span
            for e in events:
                if c and e.get('ph') == 'M':
                    continue
                e2 = dict(e)
                if 'ts' in e2:
                    e2['ts'] = e2['ts'] + shift
                if 'id' in e2 and isinstance(e2['id'], int):
                    e2['id'] += c * (corr_span if e2.get('cat') in LAUNCH_FLOWS else flow_span)
                args = e2.get('args')
                if isinstance(args, dict):
                    args = dict(args)
                    for key, width in (('correlation', corr_span), ('External id', ext_span)):
                        if isinstance(args.get(key), int):
                            args[key] += c * width
                    e2['args'] = args
                w.write(('' if first else ',\n') + json.dumps(e2))
                first = False
        w.write('\n]}\n')
    print(f'{out}: {copies} copies of {src}')

if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
