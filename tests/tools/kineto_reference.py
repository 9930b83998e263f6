#!/usr/bin/env python3
"""Independent reference numbers for the ingest golden tests.

Reads each trace with Python's json module (numbers as Decimal, so no float rounding) and prints,
per trace: events per `cat` (phases other than M and C that carry a ts), and the time span in
integer nanoseconds (min ts to max ts+dur over X/i/I events, the profiler's own "Trace" span
excluded), with microseconds converted as round-half-up to the nanosecond.
"""
import collections, decimal, gzip, json, sys

def ns(d):
    return int((decimal.Decimal(d) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_UP))

def summarise(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rb') as f:
        doc = json.load(f, parse_float=decimal.Decimal, parse_int=decimal.Decimal)
    events = doc['traceEvents'] if isinstance(doc, dict) else doc
    cats = collections.Counter()
    first = last = None
    for e in events:
        ph = e.get('ph')
        if ph in ('M', 'C') or 'ts' not in e:
            continue
        cats[e.get('cat') or '(none)'] += 1
        if ph in ('X', 'i', 'I') and e.get('cat') != 'Trace':
            t = ns(e['ts'])
            end = t + (ns(e['dur']) if ph == 'X' and 'dur' in e and e['dur'] > 0 else 0)
            first = t if first is None else min(first, t)
            last = end if last is None else max(last, end)
    return cats, first, last

for p in sys.argv[1:]:
    cats, first, last = summarise(p)
    body = ', '.join('{"%s", %d}' % (k, v) for k, v in sorted(cats.items()))
    print('  {"%s", %d, %d, {%s}},' % (p, first or 0, last or 0, body))
