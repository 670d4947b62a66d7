"""Read-side questions of one stored object: descriptions, edges and referrers.

Terms: describe (digests, kinds, warnings, edges out and referrers in), review (what a
reviewer asks: bindings of a fragment, verify now, kind counts).
"""
