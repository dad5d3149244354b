"""Span files of a bundle's pass, for the bench scripts' summaries."""
import glob
import json


def eval_total(pass_dir, name):
    """Seconds in the eval subprocess's spans called `name`, over its span files."""
    t = 0
    for f in glob.glob(f"{pass_dir}/trace/eval[-.]*.jsonl"):
        for line in open(f):
            s = json.loads(line)
            if s.get("name") == name:
                t += s["dur_us"]
    return t / 1e6
