"""The evstore command line: a thin click layer over the public evstore API."""
