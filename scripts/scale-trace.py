#!/usr/bin/env python3
"""Makes a large benchmark trace from a real one by concatenation.

Copies the events of TRACE N times; each copy is shifted in time to start right after the
previous one, and its ids are shifted past the previous copy's, each kind by its own span:
correlation ids with the launch flows' ids (a launch flow's id is its correlation id), the other
flows' ids, External ids. The ids stay distinct and as dense as in one long capture, where a
profiler's counters number them.

  scripts/scale-trace.py TRACE OUT.json TARGET_MB [PARTS]

With PARTS, the copies are also written as PARTS documents of their own, OUT.json.part1 ...
OUT.json.partPARTS, each a run of consecutive copies with the header: the file's events in PARTS
pieces, each small enough for a bare DOM parse where the whole file is not (10 GB).
"""
import gzip, json, re, sys

LAUNCH_FLOWS = ('ac2g', 'async_cpu_to_gpu')

def id_span(events, arg_keys, top_keys):
    """max - min + 1 over the integer ids under these args and top-level keys (1 if none)."""
    ids = [e['args'][k] for e in events for k in arg_keys
           if isinstance(e.get('args'), dict) and isinstance(e['args'].get(k), int)]
    ids += [e[k] for e in events for k in top_keys if isinstance(e.get(k), int)]
    return max(ids) - min(ids) + 1 if ids else 1

# Numbers no trace holds, written in place of the numbers each copy shifts: an event is serialised
# once, and each copy joins its text around the shifted values (a few times faster than
# serialising every copy, which made the 10 GB trace a quarter of an hour's work).
SENTINEL = 7770000000000000000
SENTINELS = re.compile(r'(7770000000000000\d\d\d)')

def template(e):
    """The event's JSON cut around the numbers a copy shifts, and those numbers with their kind:
    {"ts": 5, "id": 9, "cat": "ac2g"} gives (['{"ts": ', ', "id": ', ', "cat": "ac2g"}'],
    [(5, 'ts'), (9, 'corr')]); a copy's text is the pieces joined with each number shifted."""
    e2, slots = dict(e), []
    def slot(value, kind):
        slots.append((value, kind))
        return SENTINEL + len(slots) - 1
    if 'ts' in e2:
        e2['ts'] = slot(e2['ts'], 'ts')
    if 'id' in e2 and isinstance(e2['id'], int):
        e2['id'] = slot(e2['id'], 'corr' if e2.get('cat') in LAUNCH_FLOWS else 'flow')
    if isinstance(e2.get('args'), dict):
        e2['args'] = args = dict(e2['args'])
        for key, kind in (('correlation', 'corr'), ('External id', 'ext')):
            if isinstance(args.get(key), int):
                args[key] = slot(args[key], kind)
    cut = SENTINELS.split(json.dumps(e2))
    return cut[::2], [slots[int(n) - SENTINEL] for n in cut[1::2]]

class Parts:
    """The PARTS documents: copy c goes to part c * parts // copies (0 parts: none; no more
    parts than copies, so that none is empty)."""
    def __init__(self, out, parts, copies, head):
        parts = min(parts, copies)
        self.files = [open(f'{out}.part{k + 1}', 'w') for k in range(parts)]
        self.copies, self.head, self.current, self.first = copies, head, None, True
    def start_copy(self, c):
        if not self.files:
            return
        k = c * len(self.files) // self.copies
        if self.current is not k:
            self.current, self.first = k, True
            self.files[k].write(self.head)
    def write(self, text):
        if self.files:
            self.files[self.current].write(('' if self.first else ',\n') + text)
            self.first = False
    def close(self):
        for f in self.files:
            f.write('\n]}\n')
            f.close()

def main(src, out, target_mb, parts=0):
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
    templates = [template(e) for e in events]
    head = '{' + ''.join(json.dumps(k) + ': ' + json.dumps(v) + ',\n' for k, v in doc.items())
    head += '"traceEvents": [\n'
    pieces = Parts(out, parts, copies, head)
    with open(out, 'w') as w:
        w.write(head)
        first = True
        for c in range(copies):
            pieces.start_copy(c)
            shift = c * span
            moved = {'ts': shift, 'corr': c * corr_span, 'flow': c * flow_span, 'ext': c * ext_span}
            for e, (texts, slots) in zip(events, templates):
                if c and e.get('ph') == 'M':
                    continue
                text = texts[0] + ''.join(repr(v + moved[k]) + t for (v, k), t in zip(slots, texts[1:]))
                w.write(('' if first else ',\n') + text)
                pieces.write(text)
                first = False
        w.write('\n]}\n')
    pieces.close()
    made = len(pieces.files)
    print(f'{out}: {copies} copies of {src}' + (f', also in {made} parts' if made else ''))

if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 0)
